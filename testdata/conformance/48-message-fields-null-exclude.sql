-- case: fields.null.include=false (the default): JSON null members and empty arrays are left out of the decoded content, nested too
-- records: 2
-- config: transforms = decode,outbox
-- config: transforms.decode.type = io.debezium.connector.postgresql.transforms.DecodeLogicalDecodingMessageContent
-- config: transforms.decode.fields.null.include = false
-- config: message.prefix.include.list = ${schema}
-- @run
SELECT pg_logical_emit_message(true, current_schema(), '{"message_id":"n-1","aggregate_type":"orders","aggregate_id":"k","event_type":"nulls","unused":null,"payload":{"a":null,"b":1,"c":[],"d":{"e":null},"f":[1,null,2],"g":{}}}');
SELECT pg_logical_emit_message(true, current_schema(), '{"message_id":"n-2","aggregate_type":"orders","aggregate_id":"k","event_type":"empty","payload":{}}');
