-- case: one transaction of 60 rows over three aggregate types and twenty keys
-- records: 60
-- difference: json-expansion
-- The tags arrays mix strings and numbers: Debezium sends such payloads unexpanded (documented fallback).
-- @run
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
SELECT (ARRAY['orders','payments','shipments'])[1 + g % 3], 'agg-' || (g % 20), 'e' || g,
       jsonb_build_object('seq', g, 'tags', jsonb_build_array('t' || g, g * 2))
FROM generate_series(1, 60) AS g;
