-- case: both sides stopped and started again after transactions where a row follows a transactional message at the message's end LSN, then more: nothing lost, nothing twice (debezium/dbz#2058)
-- records: 6
-- config: transforms = decode,outbox
-- config: transforms.decode.type = io.debezium.connector.postgresql.transforms.DecodeLogicalDecodingMessageContent
-- config: message.prefix.include.list = ${schema}
-- @run
BEGIN;
SELECT pg_logical_emit_message(true, current_schema(), '{"message_id":"m-1","aggregate_type":"orders","aggregate_id":"o-1","event_type":"message-1","payload":{"v":1}}');
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('orders', 'o-1', 'row-2', '{"v":2}');
COMMIT;
-- @restart 2
BEGIN;
SELECT pg_logical_emit_message(true, current_schema(), '{"message_id":"m-3","aggregate_type":"orders","aggregate_id":"o-1","event_type":"message-3","payload":{"v":3}}');
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('orders', 'o-1', 'row-4', '{"v":4}');
COMMIT;
-- @restart 4
BEGIN;
SELECT pg_logical_emit_message(true, current_schema(), '{"message_id":"m-5","aggregate_type":"orders","aggregate_id":"o-1","event_type":"message-5","payload":{"v":5}}');
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('orders', 'o-1', 'row-6', '{"v":6}');
COMMIT;
