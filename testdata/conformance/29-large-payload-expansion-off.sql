-- case: a payload near 1 MiB with expansion off (a JSON string of 1,000,000 characters)
-- records: 1
-- config: transforms.outbox.table.expand.json.payload = false
-- @run
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
VALUES ('blobs', 'big-3', 'large', jsonb_build_object('blob', repeat('y', 1000000)));
