-- case: messages near 1 MiB (contents of 1,040,000 bytes, ASCII and two-byte UTF-8; a 1 MiB content cannot fit the 1 MiB max.request.size either side has)
-- records: 2
-- config: transforms = decode,outbox
-- config: transforms.decode.type = io.debezium.connector.postgresql.transforms.DecodeLogicalDecodingMessageContent
-- config: message.prefix.include.list = ${schema}
-- @run
SELECT pg_logical_emit_message(true, current_schema(), '{"message_id":"big-1","aggregate_type":"blobs","aggregate_id":"big-1","event_type":"large","payload":{"blob":"' || repeat('x', 1039880) || '","n":1}}');
SELECT pg_logical_emit_message(true, current_schema(), '{"message_id":"big-2","aggregate_type":"blobs","aggregate_id":"big-2","event_type":"large","payload":{"blob":"' || repeat('é', 519940) || '","n":2}}');
