-- case: business table and outbox in one transaction; the business table is in the publication but not in table.include.list
-- records: 2
-- @setup
CREATE TABLE orders (id bigint PRIMARY KEY, total numeric(12,2));
-- @run
BEGIN;
INSERT INTO orders VALUES (1, 10.50);
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('orders', '1', 'created', '{"id":1}');
UPDATE orders SET total = 11 WHERE id = 1;
INSERT INTO orders VALUES (2, 3);
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('orders', '2', 'created', '{"id":2}');
DELETE FROM orders WHERE id = 1;
COMMIT;
