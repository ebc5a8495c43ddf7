-- case: table.json.payload.empty.array.behavior=optional_string (Debezium 3.7) with JsonConverter schemas: empty arrays kept, typed as optional arrays of optional strings
-- records: 2
-- ci: yes
-- config: transforms.outbox.table.json.payload.empty.array.behavior = optional_string
-- config: value.converter = org.apache.kafka.connect.json.JsonConverter
-- config: value.converter.schemas.enable = true
-- @run
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
VALUES ('docs', 'e-1', 'empty', '{"tags":[],"s":"x","inner":{"none":[]}}');
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
VALUES ('docs', 'e-2', 'nested', '{"grid":[[],[]],"codes":["a"]}');
