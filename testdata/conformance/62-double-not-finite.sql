-- case: double precision and real columns holding NaN, Infinity and -Infinity as envelope fields (JsonConverter writes them as the strings Jackson quotes them as; a registry converter as the IEEE value, or for JSON Schema the same strings)
-- records: 3
-- config: transforms.outbox.table.fields.additional.placement = event_type:header:eventType, score:envelope, ratio:envelope
-- @setup
ALTER TABLE outbox ADD COLUMN score double precision, ADD COLUMN ratio real;
-- @run
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, score, ratio) VALUES ('stats', 'f-1', 'x', '{"k":1}', 'NaN', 'Infinity');
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, score, ratio) VALUES ('stats', 'f-2', 'y', '{"k":2}', '-Infinity', 'NaN');
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, score, ratio) VALUES ('stats', 'f-3', 'z', '{"k":3}', 'Infinity', '-Infinity');
