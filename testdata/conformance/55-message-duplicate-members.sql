-- case: a member name repeated in a message's content, at the top level and nested: Jackson's readTree keeps one member per name, the last value in the first one's place (a later null leaves it out)
-- records: 2
-- config: transforms = decode,outbox
-- config: transforms.decode.type = io.debezium.connector.postgresql.transforms.DecodeLogicalDecodingMessageContent
-- config: message.prefix.include.list = ${schema}
-- @run
SELECT pg_logical_emit_message(true, current_schema(), '{"message_id":"d-1","aggregate_type":"orders","aggregate_id":"k","event_type":"dup","payload":{"a":1,"b":2,"a":3,"c":{"d":1,"e":2,"d":{"f":1,"f":"x"}},"g":5,"g":null},"aggregate_type":"payments"}');
SELECT pg_logical_emit_message(true, current_schema(), '{"message_id":"d-2","aggregate_type":"orders","aggregate_id":"k1","event_type":"dup","payload":null,"aggregate_id":"k2","payload":{"h":[{"i":1,"i":2}]}}');
