-- case: message.prefix.include.list: regular expressions matched against the whole prefix, case-insensitively; other prefixes publish nothing
-- records: 3
-- config: transforms = decode,outbox
-- config: transforms.decode.type = io.debezium.connector.postgresql.transforms.DecodeLogicalDecodingMessageContent
-- config: message.prefix.include.list = ${schema}_a,${schema}_b[0-9]+
-- @run
SELECT pg_logical_emit_message(true, current_schema() || '_a', '{"message_id":"in-1","aggregate_type":"orders","aggregate_id":"k","event_type":"a","payload":{"v":1}}');
SELECT pg_logical_emit_message(true, current_schema() || '_a_suffix', '{"message_id":"out-1","aggregate_type":"orders","aggregate_id":"k","event_type":"not-whole-match","payload":{"v":0}}');
SELECT pg_logical_emit_message(true, current_schema() || '_b42', '{"message_id":"in-2","aggregate_type":"orders","aggregate_id":"k","event_type":"b42","payload":{"v":2}}');
SELECT pg_logical_emit_message(true, current_schema() || '_bx', '{"message_id":"out-2","aggregate_type":"orders","aggregate_id":"k","event_type":"bx","payload":{"v":0}}');
SELECT pg_logical_emit_message(true, upper(current_schema()) || '_A', '{"message_id":"in-3","aggregate_type":"orders","aggregate_id":"k","event_type":"upper-case","payload":{"v":3}}');
SELECT pg_logical_emit_message(true, 'x' || current_schema() || '_a', '{"message_id":"out-3","aggregate_type":"orders","aggregate_id":"k","event_type":"x","payload":{"v":0}}');
