-- case: JSON nulls, empty arrays and empty objects with expansion on (Debezium drops them)
-- records: 2
-- difference: json-expansion
-- @run
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
VALUES ('docs', 'z-1', 'nulls', '{"a":null,"b":[],"c":"x","d":{"e":null,"f":1}}');
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
VALUES ('docs', 'z-2', 'empty', '{"obj":{},"arr":[],"n":0,"s":""}');
