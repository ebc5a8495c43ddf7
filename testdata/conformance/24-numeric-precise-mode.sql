-- case: decimal.handling.mode=precise: numeric envelope field (Base64 unscaled in Debezium) and header (decimal text in both)
-- records: 2
-- difference: decimal-precise
-- config: decimal.handling.mode = precise
-- config: transforms.outbox.table.fields.additional.placement = event_type:header:eventType, amount:header, amount:envelope
-- @setup
ALTER TABLE outbox ADD COLUMN amount numeric(14,4);
-- @run
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, amount) VALUES ('ledger', 'm-1', 'x', '{"k":1}', 199.5);
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, amount) VALUES ('ledger', 'm-2', 'y', '{"k":2}', -12345678.0001);
