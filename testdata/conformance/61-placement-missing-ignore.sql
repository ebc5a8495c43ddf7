-- case: table.field.additional.missing=ignore: a message without a placement's member is routed without that header or envelope field (Debezium may write the envelope field as null: its value schema is cached by payload schema), one with it carries them
-- records: 3
-- config: transforms = decode,outbox
-- config: transforms.decode.type = io.debezium.connector.postgresql.transforms.DecodeLogicalDecodingMessageContent
-- config: message.prefix.include.list = ${schema}
-- config: transforms.outbox.table.fields.additional.placement = event_type:header:eventType,region:header,tenant:envelope:tenant
-- config: transforms.outbox.table.field.additional.missing = ignore
-- difference: missing-envelope-null
-- @run
SELECT pg_logical_emit_message(true, current_schema(), '{"message_id":"p-1","aggregate_type":"orders","aggregate_id":"k1","event_type":"both","region":"eu","tenant":"t-1","payload":{"v":1}}');
SELECT pg_logical_emit_message(true, current_schema(), '{"message_id":"p-2","aggregate_type":"orders","aggregate_id":"k1","event_type":"no-region","tenant":"t-2","payload":{"v":2}}');
SELECT pg_logical_emit_message(true, current_schema(), '{"message_id":"p-3","aggregate_type":"orders","aggregate_id":"k1","event_type":"neither","payload":{"v":3}}');
