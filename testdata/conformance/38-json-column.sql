-- case: a json (not jsonb) payload column: its text as written, with expansion on
-- records: 2
-- difference: json-expansion
-- @setup
ALTER TABLE outbox ALTER COLUMN payload TYPE json;
-- @run
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('docs', 'j-1', 'x', '{ "z" : 1,  "a" : [ 1, 2 ], "dup": 1, "dup": 2 }');
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('docs', 'j-2', 'y', '{"b":true,"a":"text"}');
