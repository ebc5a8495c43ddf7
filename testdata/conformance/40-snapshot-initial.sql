-- case: snapshot.mode=initial: rows present before the slot exist are read once (op r), then streaming
-- records: 3
-- config: snapshot.mode = initial
-- @setup
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('orders', 's-1', 'before', '{"v":1}');
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('orders', 's-2', 'before', '{"v":2}');
-- @run
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('orders', 's-3', 'after', '{"v":3}');
