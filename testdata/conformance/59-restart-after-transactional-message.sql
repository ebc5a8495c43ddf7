-- case: both sides stopped and started again after a transaction whose last event is a transactional message, then more: outboxrelay sends nothing twice; Debezium 3.7.1 may send that transaction again (debezium/dbz#2004)
-- records: 4
-- difference: restart-resend
-- config: transforms = decode,outbox
-- config: transforms.decode.type = io.debezium.connector.postgresql.transforms.DecodeLogicalDecodingMessageContent
-- config: message.prefix.include.list = ${schema}
-- @run
BEGIN;
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('orders', 'o-1', 'row-1', '{"v":1}');
SELECT pg_logical_emit_message(true, current_schema(), '{"message_id":"m-2","aggregate_type":"orders","aggregate_id":"o-1","event_type":"message-2","payload":{"v":2}}');
COMMIT;
-- @restart 2
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('orders', 'o-1', 'row-3', '{"v":3}');
SELECT pg_logical_emit_message(true, current_schema(), '{"message_id":"m-4","aggregate_type":"orders","aggregate_id":"o-1","event_type":"message-4","payload":{"v":4}}');
