-- case: a 3-partition topic: partitions chosen by Java's murmur2 of the serialized key
-- records: 30
-- ci: yes
-- config: topic.creation.default.partitions = 3
-- @run
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
SELECT 'orders', 'customer-' || g, 'e' || g, jsonb_build_object('g', g) FROM generate_series(1, 24) AS g;
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
SELECT 'orders', k, 'u', '{}' FROM unnest(ARRAY['', 'ä', '9191642889', 'pay-889900', '🙂', 'x']) AS k;
