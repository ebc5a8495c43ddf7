-- case: several messages and outbox rows mixed in one transaction: routed in their order within it, and a row-only transaction after
-- records: 7
-- config: transforms = decode,outbox
-- config: transforms.decode.type = io.debezium.connector.postgresql.transforms.DecodeLogicalDecodingMessageContent
-- config: message.prefix.include.list = ${schema}
-- @run
BEGIN;
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('orders', 'o-9', 'row-1', '{"v":1}');
SELECT pg_logical_emit_message(true, current_schema(), '{"message_id":"m-1","aggregate_type":"orders","aggregate_id":"o-9","event_type":"message-2","payload":{"v":2}}');
SELECT pg_logical_emit_message(true, current_schema(), '{"message_id":"m-2","aggregate_type":"orders","aggregate_id":"o-9","event_type":"message-3","payload":{"v":3}}');
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('orders', 'o-9', 'row-4', '{"v":4}');
SELECT pg_logical_emit_message(true, current_schema(), '{"message_id":"m-3","aggregate_type":"shipments","aggregate_id":"s-1","event_type":"message-5","payload":{"v":5}}');
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('orders', 'o-9', 'row-6', '{"v":6}');
COMMIT;
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('orders', 'o-9', 'row-7', '{"v":7}');
