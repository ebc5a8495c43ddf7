-- case: TRUNCATE, a logical decoding message and ALTER TABLE ADD COLUMN between events publish nothing
-- records: 3
-- @run
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('orders', 't-1', 'x', '{"v":1}');
TRUNCATE outbox;
SELECT pg_logical_emit_message(true, 'outbox-test', 'not an event');
ALTER TABLE outbox ADD COLUMN added text DEFAULT 'new';
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('orders', 't-2', 'y', '{"v":2}');
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, added) VALUES ('orders', 't-3', 'z', '{"v":3}', 'set');
