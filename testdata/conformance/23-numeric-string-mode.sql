-- case: a numeric column as header and envelope field with decimal.handling.mode=string (the fixture's)
-- records: 2
-- config: transforms.outbox.table.fields.additional.placement = event_type:header:eventType, amount:header, amount:envelope
-- @setup
ALTER TABLE outbox ADD COLUMN amount numeric(14,4);
-- @run
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, amount) VALUES ('ledger', 'm-1', 'x', '{}', 199.5);
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, amount) VALUES ('ledger', 'm-2', 'y', '{"k":1}', -12345678.0001);
