-- case: content that is not a JSON object (text, an array, leading space, broken JSON) is a poison message: with errors.tolerance=all both skip it and go on
-- records: 2
-- config: transforms = decode,outbox
-- config: transforms.decode.type = io.debezium.connector.postgresql.transforms.DecodeLogicalDecodingMessageContent
-- config: message.prefix.include.list = ${schema}
-- config: errors.tolerance = all
-- @run
SELECT pg_logical_emit_message(true, current_schema(), 'not json at all');
SELECT pg_logical_emit_message(true, current_schema(), '{"message_id":"ok-1","aggregate_type":"orders","aggregate_id":"k","event_type":"valid","payload":{"v":1}}');
SELECT pg_logical_emit_message(true, current_schema(), '[1,2,3]');
SELECT pg_logical_emit_message(true, current_schema(), ' {"message_id":"space","aggregate_type":"orders","aggregate_id":"k","event_type":"leading-space","payload":{}}');
SELECT pg_logical_emit_message(true, current_schema(), '{"message_id":"broken","aggregate_type":');
SELECT pg_logical_emit_message(true, current_schema(), '{"message_id":"ok-2","aggregate_type":"orders","aggregate_id":"k","event_type":"valid","payload":{"v":2}}');
