-- case: UPDATEs of outbox rows publish nothing (table.op.invalid.behavior=warn, the default)
-- records: 2
-- @run
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('orders', 'u-1', 'created', '{"v":1}');
UPDATE outbox SET status = 'SENT', sent_at = now() WHERE aggregate_id = 'u-1';
UPDATE outbox SET payload = '{"v":2}', event_type = 'changed' WHERE aggregate_id = 'u-1';
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('orders', 'u-1', 'final', '{"v":3}');
