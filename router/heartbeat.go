package router

import (
	"strconv"
	"time"
)

// Heartbeat returns the record Debezium's heartbeat emits every
// heartbeat.interval.ms, which the EventRouter passes through unchanged:
// partition 0 of topic, key a ServerNameKey struct {serverName: topic.prefix},
// value a Heartbeat struct {ts_ms: now}, serialized with the configured
// converters. Like Route's records, its bytes are valid until the next call.
func (r *Router) Heartbeat(topic string, now time.Time) Record {
	ms := strconv.AppendInt(nil, now.UnixMilli(), 10)
	name := jsonString(r.cfg.TopicPrefix)
	var key, value []byte
	switch r.cfg.KeyConverter {
	case ConverterJSON:
		key = concat(`{"serverName":`, name, `}`)
	case ConverterJSONWithSchema:
		key = concat(`{"schema":{"type":"struct","fields":[{"type":"string","optional":false,"field":"serverName"}],"optional":false,"name":"io.debezium.connector.common.ServerNameKey","version":1},"payload":{"serverName":`, name, `}}`)
	default: // StringConverter prints Connect's Struct.toString()
		key = concat(`Struct{serverName=`, []byte(r.cfg.TopicPrefix), `}`)
	}
	switch r.cfg.ValueConverter {
	case ConverterString:
		value = concat(`Struct{ts_ms=`, ms, `}`)
	case ConverterJSONWithSchema:
		value = concat(`{"schema":{"type":"struct","fields":[{"type":"int64","optional":false,"field":"ts_ms"}],"optional":false,"name":"io.debezium.connector.common.Heartbeat","version":1},"payload":{"ts_ms":`, ms, `}}`)
	default: // JsonConverter without schemas, outboxrelay's default
		value = concat(`{"ts_ms":`, ms, `}`)
	}
	return Record{Topic: topic, Partition: 0, Key: key, Value: value, Timestamp: now}
}

func jsonString(s string) []byte {
	return AppendJSONString(nil, s)
}

func concat(prefix string, mid []byte, suffix string) []byte {
	out := make([]byte, 0, len(prefix)+len(mid)+len(suffix))
	out = append(out, prefix...)
	out = append(out, mid...)
	return append(out, suffix...)
}
