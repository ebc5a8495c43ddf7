-- case: tombstones on, text payload: empty and blank text are tombstones, JSON null text is not
-- records: 4
-- difference: json-expansion
-- config: transforms.outbox.route.tombstone.on.empty.payload = true
-- @setup
ALTER TABLE outbox ALTER COLUMN payload TYPE text, ALTER COLUMN payload DROP NOT NULL;
-- @run
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('customers', 'c-1', 'a', '');
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('customers', 'c-1', 'b', E'  \t ');
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('customers', 'c-1', 'c', 'null');
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('customers', 'c-1', 'd', '{"k": "v"}');
