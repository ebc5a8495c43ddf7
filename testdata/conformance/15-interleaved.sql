-- case: two interleaved transactions: records follow commit order, not statement order
-- records: 5
-- ci: yes
-- poll-order: order-column
-- (poll mode cannot see commit order: it publishes one aggregate's rows in
-- order-column order, here the time-ordered ids, i.e. statement order)
-- @run
-- @conn 1
BEGIN;
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('orders', 'same', 'tx1-a', '{"tx":1,"n":1}');
-- @conn 2
BEGIN;
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('orders', 'same', 'tx2-a', '{"tx":2,"n":1}');
-- @conn 1
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('orders', 'same', 'tx1-b', '{"tx":1,"n":2}');
-- @conn 2
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('orders', 'same', 'tx2-b', '{"tx":2,"n":2}');
COMMIT;
-- @conn 1
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('orders', 'same', 'tx1-c', '{"tx":1,"n":3}');
COMMIT;
