-- case: extended.headers.enabled=true: Debezium adds its context headers to the row's record and none to the message's (its message records carry no headers)
-- records: 2
-- difference: run-id
-- config: transforms = decode,outbox
-- config: transforms.decode.type = io.debezium.connector.postgresql.transforms.DecodeLogicalDecodingMessageContent
-- config: extended.headers.enabled = true
-- config: message.prefix.include.list = ${schema}
-- @run
BEGIN;
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('orders', 'x-1', 'row', '{"v":1}');
SELECT pg_logical_emit_message(true, current_schema(), '{"message_id":"m-1","aggregate_type":"orders","aggregate_id":"x-1","event_type":"message","payload":{"v":2}}');
COMMIT;
