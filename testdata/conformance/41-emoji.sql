-- case: characters beyond the BMP (emoji) in keys, headers and payloads, expansion on and in an envelope
-- records: 2
-- config: transforms.outbox.table.fields.additional.placement = event_type:header:eventType, remark:envelope:note
-- difference: unicode-escapes
-- Jackson writes non-BMP characters in JSON values as UTF-16 surrogate escapes (\uD83D\uDE42); keys and headers are raw UTF-8.
-- @run
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, remark)
VALUES ('customers', '顧客🙂', '登録済み🎉', '{"emoji":"👩‍💻🏳️‍🌈","math":"𝔘"}', '🙂');
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, remark)
VALUES ('customers', 'plain', 'x', '{"k":"v"}', 'no emoji');
