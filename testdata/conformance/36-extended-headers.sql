-- case: extended.headers.enabled=true on both: Debezium's context headers first, then id and placements
-- records: 1
-- difference: run-id
-- config: extended.headers.enabled = true
-- @run
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('orders', 'x-1', 'created', '{"v":1}');
