-- case: big and precise numbers with expansion off: PostgreSQL's jsonb text, kept by both
-- records: 1
-- config: transforms.outbox.table.expand.json.payload = false
-- @run
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
VALUES ('ledger', 'n-1', 'numbers', '{"a":199.00,"b":12345678.9,"c":9007199254740993,"big":123456789012345678901234567890.123456789,"e":1.0E+2,"f":1e-7}');
