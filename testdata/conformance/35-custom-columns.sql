-- case: custom column names: bigint id (header), bigint key, text payload, route by a varchar column
-- records: 2
-- table: custom
-- config: transforms.outbox.table.field.event.id = id
-- config: transforms.outbox.table.field.event.key = key
-- config: transforms.outbox.table.field.event.payload = body
-- config: transforms.outbox.route.by.field = kind
-- config: transforms.outbox.table.fields.additional.placement = ok:header
-- @setup
CREATE TABLE outbox (id bigint PRIMARY KEY, kind varchar(64) NOT NULL, key bigint, body text, ok boolean);
-- @run
INSERT INTO outbox VALUES (1, 'accounts', 42, '{"a": 1, "b": [true]}', true);
INSERT INTO outbox VALUES (2, 'accounts', -7, 'not json at all', false);
