-- case: Debezium's default replacement (outbox.event.${routedByValue}) and route.by.field on another column
-- records: 2
-- config: transforms.outbox.route.topic.replacement =
-- config: transforms.outbox.route.by.field = event_type
-- @run
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('orders', 'r-1', 'OrderCreated', '{"v":1}');
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('orders', 'r-2', 'OrderPaid', '{"v":2}');
