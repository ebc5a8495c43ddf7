-- case: table.json.payload.empty.array.behavior=ignore (the default) with JsonConverter schemas: Debezium leaves empty arrays out of schema and value, outboxrelay out of the schema only
-- records: 1
-- difference: json-expansion
-- config: transforms.outbox.table.json.payload.empty.array.behavior = ignore
-- config: value.converter = org.apache.kafka.connect.json.JsonConverter
-- config: value.converter.schemas.enable = true
-- @run
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
VALUES ('docs', 'i-1', 'empty', '{"tags":[],"s":"x"}');
