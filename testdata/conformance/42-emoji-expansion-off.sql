-- case: characters beyond the BMP with expansion off (the jsonb text as a JSON string)
-- records: 1
-- config: transforms.outbox.table.expand.json.payload = false
-- difference: unicode-escapes
-- @run
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
VALUES ('customers', '🙂', 'x', '{"emoji":"👩‍💻"}');
