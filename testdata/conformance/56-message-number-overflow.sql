-- case: a nested number beyond a double's range (1e400) is Java's Infinity, written as the string "Infinity"; an array holding an empty array fails the message on both sides (errors.tolerance=all skips it)
-- records: 3
-- config: transforms = decode,outbox
-- config: transforms.decode.type = io.debezium.connector.postgresql.transforms.DecodeLogicalDecodingMessageContent
-- config: message.prefix.include.list = ${schema}
-- config: errors.tolerance = all
-- @run
SELECT pg_logical_emit_message(true, current_schema(), '{"message_id":"ok-1","aggregate_type":"orders","aggregate_id":"k","event_type":"valid","payload":{"v":1}}');
SELECT pg_logical_emit_message(true, current_schema(), '{"message_id":"inf","aggregate_type":"orders","aggregate_id":"k","event_type":"overflow","payload":{"d":1e400}}');
SELECT pg_logical_emit_message(true, current_schema(), '{"message_id":"nested-empty","aggregate_type":"orders","aggregate_id":"k","event_type":"nested-empty","payload":{"a":[[]],"b":[[],[1]]}}');
SELECT pg_logical_emit_message(true, current_schema(), '{"message_id":"ok-2","aggregate_type":"orders","aggregate_id":"k","event_type":"valid","payload":{"v":2}}');
