-- case: payloads near 1 MiB (1,000,000 and 1,040,000 characters) with expansion on
-- records: 2
-- difference: json-expansion
-- @run
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
VALUES ('blobs', 'big-1', 'large', jsonb_build_object('blob', repeat('x', 1000000), 'n', 1));
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
VALUES ('blobs', 'big-2', 'large', jsonb_build_object('blob', repeat('é', 520000), 'n', 2));
