-- case: header placements: alias, default alias, integer, NULL, the id column again
-- records: 2
-- ci: yes
-- config: transforms.outbox.table.fields.additional.placement = event_type:header:eventType, aggregate_id:header, version:header:v, remark:header:remark, retry_count:header, message_id:header:id
-- @run
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, version, remark, retry_count)
VALUES ('orders', 'o-1', 'created', '{"n":1}', 7, 'first', 0);
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, version, remark, retry_count)
VALUES ('orders', 'o-1', 'paid', '{"n":2}', -3, NULL, 2147483647);
