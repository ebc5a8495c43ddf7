-- case: tombstones off (default): a NULL payload
-- records: 2
-- @setup
ALTER TABLE outbox ALTER COLUMN payload DROP NOT NULL;
-- @run
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('customers', 'c-1', 'deleted', NULL);
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('customers', 'c-2', 'created', '{"name":"Bo"}');
