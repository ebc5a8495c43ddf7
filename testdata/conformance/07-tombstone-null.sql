-- case: route.tombstone.on.empty.payload=true: a NULL payload gives a tombstone with topic, key and headers
-- records: 3
-- ci: yes
-- config: transforms.outbox.route.tombstone.on.empty.payload = true
-- @setup
ALTER TABLE outbox ALTER COLUMN payload DROP NOT NULL;
-- @run
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('customers', 'c-1', 'created', '{"name":"Ann"}');
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('customers', 'c-1', 'deleted', NULL);
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('customers', 'c-2', 'created', '{"name":"Bo"}');
