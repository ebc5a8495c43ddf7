-- case: example events with table.expand.json.payload=false: the value is the jsonb text as a JSON string
-- records: 2
-- ci: yes
-- config: transforms.outbox.table.expand.json.payload = false
-- @run
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
VALUES ('orders', '9191642889', 'paid', '{"orderId":9191642889,"payableAmount":199.00}');
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
VALUES ('payments', 'pay-889900', 'PaymentSucceeded', '{"paymentId":"pay-889900","channel":"wallet"}');
