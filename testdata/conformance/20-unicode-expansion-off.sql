-- case: BMP unicode and escapes with expansion off: the jsonb text as a JSON string
-- records: 2
-- config: transforms.outbox.table.expand.json.payload = false
-- @run
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
VALUES ('customers', '顧客', '登録済み', '{"cjk":"東京","rtl":"שלום","combining":"e\u0301","sep":"\u2028\u2029"}');
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
VALUES ('customers', 'esc', 'e', E'{"esc":"quote \\" backslash \\\\ nl \\n tab \\t ctl \\u0001 \\u001f del \u007f slash /"}');
