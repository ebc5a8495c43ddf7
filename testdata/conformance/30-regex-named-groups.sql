-- case: route.topic.regex with named groups and a replacement using them
-- records: 3
-- config: transforms.outbox.route.topic.regex = (?<domain>[a-z]+)\.(?<kind>[a-z]+)
-- config: transforms.outbox.route.topic.replacement = ${kind}-${domain}.events
-- @run
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('sales.order', 'g-1', 'x', '{"v":1}');
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('billing.invoice', 'g-2', 'y', '{"v":2}');
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('sales.order', 'g-3', 'z', '{"v":3}');
