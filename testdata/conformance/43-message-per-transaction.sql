-- case: an outbox without a table: one pg_logical_emit_message per transaction, decoded (DecodeLogicalDecodingMessageContent) and routed by the EventRouter
-- records: 3
-- ci: yes
-- config: transforms = decode,outbox
-- config: transforms.decode.type = io.debezium.connector.postgresql.transforms.DecodeLogicalDecodingMessageContent
-- config: message.prefix.include.list = ${schema}
-- @run
SELECT pg_logical_emit_message(true, current_schema(), '{"message_id":"m-1","aggregate_type":"orders","aggregate_id":"o-1","event_type":"OrderCreated","payload":{"orderId":1,"total":19.9,"paid":false,"lines":[{"sku":"A-1","qty":2},{"sku":"B-2","qty":1}],"customer":{"name":"Zoë","vip":true}}}');
BEGIN;
SELECT pg_logical_emit_message(true, current_schema(), '{"message_id":"m-2","aggregate_type":"orders","aggregate_id":"o-1","event_type":"OrderPaid","payload":{"orderId":1,"amount":100.0,"at":"2026-12-01T23:00:00Z","big":9007199254740993}}');
COMMIT;
SELECT pg_logical_emit_message(true, current_schema(), '{"message_id":"m-3","aggregate_type":"payments","aggregate_id":"p-7","event_type":"PaymentSucceeded","payload":{"paymentId":"p-7","channel":"wallet","ratio":1.5e-5,"escaped":"a\"b\\c\u00e9\/"}}');
