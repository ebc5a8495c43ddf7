-- case: an UPDATE that changes the primary key is a delete plus a create; the create is routed with the new id
-- records: 3
-- @run
INSERT INTO outbox (message_id, aggregate_type, aggregate_id, event_type, payload)
VALUES ('00000000-0000-4000-8000-000000000001', 'orders', 'pk-1', 'created', '{"v":1}');
UPDATE outbox SET message_id = '00000000-0000-4000-8000-000000000002', event_type = 'rekeyed' WHERE aggregate_id = 'pk-1';
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('orders', 'pk-2', 'final', '{"v":3}');
