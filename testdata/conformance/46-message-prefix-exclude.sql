-- case: message.prefix.exclude.list: every prefix but the excluded ones (here the other cases' prefixes, skip-*, and a whole-match check)
-- records: 2
-- config: transforms = decode,outbox
-- config: transforms.decode.type = io.debezium.connector.postgresql.transforms.DecodeLogicalDecodingMessageContent
-- config: message.prefix.exclude.list = cf.*,x.*,outbox-test,skip-.*,ev-${schema}-x
-- @run
SELECT pg_logical_emit_message(true, 'ev-' || current_schema(), '{"message_id":"in-1","aggregate_type":"orders","aggregate_id":"k","event_type":"kept","payload":{"v":1}}');
SELECT pg_logical_emit_message(true, 'skip-' || current_schema(), '{"message_id":"out-1","aggregate_type":"orders","aggregate_id":"k","event_type":"skipped","payload":{"v":0}}');
SELECT pg_logical_emit_message(true, 'ev-' || current_schema() || '-x', '{"message_id":"out-2","aggregate_type":"orders","aggregate_id":"k","event_type":"skipped","payload":{"v":0}}');
SELECT pg_logical_emit_message(true, 'ev-' || current_schema() || '-xy', '{"message_id":"in-2","aggregate_type":"orders","aggregate_id":"k","event_type":"kept-not-whole-match","payload":{"v":2}}');
