-- case: message fields of other JSON types: integer id (header) and long key, boolean and double headers, envelope placements of a number and an object, a partition placement
-- records: 3
-- config: transforms = decode,outbox
-- config: transforms.decode.type = io.debezium.connector.postgresql.transforms.DecodeLogicalDecodingMessageContent
-- config: message.prefix.include.list = ${schema}
-- config: topic.creation.default.partitions = 3
-- config: transforms.outbox.table.fields.additional.placement = event_type:header:eventType,flag:header,ratio:header,n:envelope:n,meta:envelope:meta,part:partition
-- @run
SELECT pg_logical_emit_message(true, current_schema(), '{"message_id":42,"aggregate_type":"orders","aggregate_id":9007199254740993,"event_type":"typed","flag":true,"ratio":0.25,"n":7,"meta":{"source":"svc","tags":["a","b"]},"part":2,"payload":{"v":1}}');
SELECT pg_logical_emit_message(true, current_schema(), '{"message_id":"s-2","aggregate_type":"orders","aggregate_id":"k2","event_type":"typed","flag":false,"ratio":1e7,"n":-1,"meta":{},"part":0,"payload":"text payload, expanded or not"}');
SELECT pg_logical_emit_message(true, current_schema(), '{"message_id":"s-3","aggregate_type":"orders","aggregate_id":"k3","event_type":"typed","flag":false,"ratio":100.0,"n":2147483648,"meta":{"deep":{"deeper":[{"x":1}]}},"part":1,"payload":[1,2,3]}');
