-- case: fields.null.include=true: JSON nulls are kept, in the payload and as a header placement (a null header); empty arrays are still left out
-- records: 2
-- config: transforms = decode,outbox
-- config: transforms.decode.type = io.debezium.connector.postgresql.transforms.DecodeLogicalDecodingMessageContent
-- config: transforms.decode.fields.null.include = true
-- config: message.prefix.include.list = ${schema}
-- config: transforms.outbox.table.fields.additional.placement = event_type:header:eventType,note:header:note
-- @run
SELECT pg_logical_emit_message(true, current_schema(), '{"message_id":"n-1","aggregate_type":"orders","aggregate_id":"k","event_type":"nulls","note":null,"payload":{"a":null,"b":1,"c":[],"d":{"e":null},"f":[1,null,2],"g":{}}}');
SELECT pg_logical_emit_message(true, current_schema(), '{"message_id":"n-2","aggregate_type":"orders","aggregate_id":"k","event_type":"no-nulls","note":"set","payload":{"b":2}}');
