-- case: a json payload column with a key repeated in an object, at the top level, nested and in array elements, the values changing type: Jackson's readTree (Debezium's ExpandJsonPayload) keeps the last value in the first place (a last null leaves it out); the inferred schema (registry converters) follows it
-- records: 2
-- difference: json-expansion
-- @setup
ALTER TABLE outbox ALTER COLUMN payload TYPE json;
-- @run
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('docs', 'dk-1', 'x', '{"a":1,"b":2,"a":"x","c":{"d":1,"d":{"f":1,"f":"y"}},"g":5,"g":null}');
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('docs', 'dk-2', 'y', '{"h":[{"i":1,"i":"s"},{"i":"t"}],"k":"first","k":[1,2],"m":null,"m":true}');
