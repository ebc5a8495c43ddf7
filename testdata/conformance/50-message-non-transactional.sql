-- case: non-transactional messages are published when the server decodes them: before the rows of the transaction that emitted them, and even when it rolls back
-- records: 4
-- config: transforms = decode,outbox
-- config: transforms.decode.type = io.debezium.connector.postgresql.transforms.DecodeLogicalDecodingMessageContent
-- config: message.prefix.include.list = ${schema}
-- @run
BEGIN;
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('orders', 'k', 'row-in-tx', '{"v":1}');
SELECT pg_logical_emit_message(false, current_schema(), '{"message_id":"nt-1","aggregate_type":"orders","aggregate_id":"k","event_type":"non-transactional-before-commit","payload":{"v":2}}');
COMMIT;
BEGIN;
SELECT pg_logical_emit_message(false, current_schema(), '{"message_id":"nt-2","aggregate_type":"orders","aggregate_id":"k","event_type":"non-transactional-in-rolled-back-tx","payload":{"v":3}}');
SELECT pg_logical_emit_message(true, current_schema(), '{"message_id":"t-3","aggregate_type":"orders","aggregate_id":"k","event_type":"transactional-rolled-back","payload":{"v":0}}');
ROLLBACK;
SELECT pg_logical_emit_message(false, current_schema(), '{"message_id":"nt-4","aggregate_type":"orders","aggregate_id":"k","event_type":"non-transactional-alone","payload":{"v":4}}');
