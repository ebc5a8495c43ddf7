-- case: partition placement from an integer column on a 3-partition topic
-- records: 4
-- ci: yes
-- config: topic.creation.default.partitions = 3
-- config: transforms.outbox.table.fields.additional.placement = event_type:header:eventType, part:partition
-- @setup
ALTER TABLE outbox ADD COLUMN part integer NOT NULL DEFAULT 0;
-- @run
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, part) VALUES
  ('orders', 'same-key', 'a', '{"p":2}', 2),
  ('orders', 'same-key', 'b', '{"p":0}', 0),
  ('orders', 'other-key', 'c', '{"p":1}', 1),
  ('orders', 'other-key', 'd', '{"p":2}', 2);
