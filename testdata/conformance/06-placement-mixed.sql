-- case: header, envelope and partition placements together, with spaces and mixed-case kinds; the last partition wins
-- records: 3
-- config: topic.creation.default.partitions = 3
-- config: transforms.outbox.table.fields.additional.placement =  event_type : HEADER : eventType , version:Envelope:ver, part2:partition, aggregate_id:header:agg, part:Partition
-- @setup
ALTER TABLE outbox ADD COLUMN part integer NOT NULL DEFAULT 0, ADD COLUMN part2 integer NOT NULL DEFAULT 0;
-- @run
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, version, part, part2) VALUES
  ('orders', 'k1', 'a', '{"x":"1"}', 1, 1, 0),
  ('orders', 'k2', 'b', '{"x":"2"}', 2, 2, 1),
  ('orders', 'k3', 'c', '{"x":"3"}', 3, 0, 2);
