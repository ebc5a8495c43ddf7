-- case: a uuid key column and an integer header, key StringConverter
-- records: 2
-- config: transforms.outbox.table.field.event.key = message_id
-- config: transforms.outbox.table.fields.additional.placement = event_type:header:eventType, version:header
-- @run
INSERT INTO outbox (message_id, aggregate_type, aggregate_id, event_type, payload, version)
VALUES ('6F9619FF-8B86-D011-B42D-00C04FC964FF', 'orders', 'k', 'x', '{}', 9);
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, version) VALUES ('orders', 'k', 'y', '{}', 0);
