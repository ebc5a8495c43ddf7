-- case: transactional messages in a rolled-back transaction or savepoint publish nothing; the committed ones are published
-- records: 2
-- config: transforms = decode,outbox
-- config: transforms.decode.type = io.debezium.connector.postgresql.transforms.DecodeLogicalDecodingMessageContent
-- config: message.prefix.include.list = ${schema}
-- @run
BEGIN;
SELECT pg_logical_emit_message(true, current_schema(), '{"message_id":"r-0","aggregate_type":"orders","aggregate_id":"k","event_type":"rolled-back","payload":{"v":0}}');
ROLLBACK;
BEGIN;
SELECT pg_logical_emit_message(true, current_schema(), '{"message_id":"r-1","aggregate_type":"orders","aggregate_id":"k","event_type":"kept","payload":{"v":1}}');
SAVEPOINT s1;
SELECT pg_logical_emit_message(true, current_schema(), '{"message_id":"r-2","aggregate_type":"orders","aggregate_id":"k","event_type":"rolled-back-to-savepoint","payload":{"v":2}}');
ROLLBACK TO SAVEPOINT s1;
SELECT pg_logical_emit_message(true, current_schema(), '{"message_id":"r-3","aggregate_type":"orders","aggregate_id":"k","event_type":"kept","payload":{"v":3}}');
COMMIT;
