-- case: route.topic.regex with numbered groups ($1, $2) in the replacement
-- records: 2
-- config: transforms.outbox.route.topic.regex = (.*)-v(\d+)
-- config: transforms.outbox.route.topic.replacement = $1_v$2
-- @run
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('Orders-v2', 'h-1', 'x', '{"v":1}');
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('payments-v10', 'h-2', 'y', '{"v":2}');
