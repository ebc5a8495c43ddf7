-- case: envelope placements: {"payload":…, aliases in config order}, text, integer and NULL fields
-- records: 2
-- ci: yes
-- config: transforms.outbox.table.fields.additional.placement = event_type:envelope:type, version:envelope, remark:envelope:note, event_type:header:eventType
-- @run
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, version, remark)
VALUES ('orders', 'o-2', 'created', '{"items":[{"sku":"A","qty":2}],"ok":true}', 1, 'hello');
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, version, remark)
VALUES ('orders', 'o-2', 'shipped', '{"carrier":"DHL"}', 2, NULL);
