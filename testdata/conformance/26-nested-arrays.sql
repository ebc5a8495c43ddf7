-- case: nested arrays and objects with expansion on
-- records: 2
-- difference: json-expansion
-- @run
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
VALUES ('docs', 'n-1', 'nested', '{"m":[[1,2],[3,4]],"o":[{"a":{"b":{"c":[true,false]}}},{"a":{"b":{"c":[false]}}}],"s":[["x"],["y","z"]]}');
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
VALUES ('docs', 'n-2', 'nested', '{"deep":{"l1":{"l2":{"l3":{"l4":{"l5":[{"k":"v"}]}}}}}}');
