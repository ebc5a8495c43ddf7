-- case: double precision and real columns as envelope fields and headers (Java prints 100.0)
-- records: 2
-- difference: float-text
-- config: transforms.outbox.table.fields.additional.placement = event_type:header:eventType, score:header, score:envelope, ratio:envelope
-- @setup
ALTER TABLE outbox ADD COLUMN score double precision, ADD COLUMN ratio real;
-- @run
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, score, ratio) VALUES ('stats', 's-1', 'x', '{"k":1}', 100, 0.5);
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, score, ratio) VALUES ('stats', 's-2', 'y', '{"k":2}', 0.1, 1.5e10);
