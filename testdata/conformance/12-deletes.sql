-- case: DELETEs publish nothing (no tombstone from the connector's delete either)
-- records: 3
-- @run
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('orders', 'd-1', 'created', '{"v":1}');
DELETE FROM outbox WHERE aggregate_id = 'd-1';
BEGIN;
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('orders', 'd-2', 'created', '{"v":2}');
DELETE FROM outbox WHERE aggregate_id = 'd-2';
COMMIT;
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('orders', 'd-3', 'created', '{"v":3}');
