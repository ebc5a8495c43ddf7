-- case: rolled-back transactions and a rolled-back savepoint publish nothing
-- records: 3
-- ci: yes
-- @run
BEGIN;
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('orders', 'r-0', 'rolled-back', '{"v":0}');
ROLLBACK;
BEGIN;
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('orders', 'r-1', 'kept', '{"v":1}');
SAVEPOINT s1;
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('orders', 'r-2', 'rolled-back-to-savepoint', '{"v":2}');
ROLLBACK TO SAVEPOINT s1;
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('orders', 'r-3', 'kept', '{"v":3}');
COMMIT;
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('orders', 'r-4', 'kept', '{"v":4}');
