-- case: new aggregate types route to new topics with no config change
-- records: 4
-- @run
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('orders', 'a', 'x', '{}');
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('shipments', 'b', 'x', '{}');
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('Invoices_2026', 'c', 'x', '{}');
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('returns.v1', 'd', 'x', '{}');
