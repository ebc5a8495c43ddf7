-- case: two outbox tables in table.include.list, written in one transaction
-- records: 3
-- config: table.include.list = ${schema}\.outbox,${schema}\.outbox_b
-- @setup
CREATE TABLE outbox_b (LIKE outbox INCLUDING ALL);
-- @run
BEGIN;
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('orders', 'a-1', 'from-a', '{"t":"a"}');
INSERT INTO outbox_b (aggregate_type, aggregate_id, event_type, payload) VALUES ('orders', 'b-1', 'from-b', '{"t":"b"}');
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('orders', 'a-2', 'from-a', '{"t":"a2"}');
COMMIT;
