-- case: unicode keys, header values and payloads in the Basic Multilingual Plane (Cyrillic, CJK, RTL, combining marks, escapes)
-- records: 3
-- ci: yes
-- @run
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
VALUES ('customers', 'клиент-42', 'Создан', '{"имя":"Анна","город":"Санкт-Петербург"}');
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
VALUES ('customers', '顧客', '登録済み', '{"cjk":"東京","rtl":"שלום","combining":"e\u0301","sep":"\u2028\u2029","bom":"\ufeff"}');
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
VALUES ('customers', 'q"\\', 'tab	here', E'{"esc":"quote \\" backslash \\\\ nl \\n tab \\t ctl \\u0001 slash /","k\\"ey":1}');
