-- case: the two example events of the design documents
-- records: 2
-- difference: json-expansion
-- ci: yes
-- Debezium re-parses 199.00 as the double 199.0 (fixtures/README.md).
-- @run
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
VALUES ('orders', '9191642889', 'paid', '{"orderId":9191642889,"payableAmount":199.00}');
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
VALUES ('payments', 'pay-889900', 'PaymentSucceeded', '{"paymentId":"pay-889900","channel":"wallet"}');
