-- case: UPDATEs with table.op.invalid.behavior=error: logged and skipped
-- records: 2
-- config: transforms.outbox.table.op.invalid.behavior = error
-- @run
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('orders', 'u-2', 'created', '{"v":1}');
UPDATE outbox SET retry_count = retry_count + 1;
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('orders', 'u-2', 'final', '{"v":2}');
