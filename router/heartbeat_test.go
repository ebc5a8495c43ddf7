package router

import (
	"testing"
	"time"
)

func TestHeartbeat(t *testing.T) {
	now := time.UnixMilli(1732900000123)
	cases := []struct {
		name, keyConv, valueConv string
		schemas                  string
		key, value               string
	}{
		{"defaults", "", "", "",
			`Struct{serverName=order_db}`, `{"ts_ms":1732900000123}`},
		{"json without schemas", JSONConverterClass, JSONConverterClass, "false",
			`{"serverName":"order_db"}`, `{"ts_ms":1732900000123}`},
		{"json with schemas", JSONConverterClass, JSONConverterClass, "true",
			`{"schema":{"type":"struct","fields":[{"type":"string","optional":false,"field":"serverName"}],"optional":false,"name":"io.debezium.connector.common.ServerNameKey","version":1},"payload":{"serverName":"order_db"}}`,
			`{"schema":{"type":"struct","fields":[{"type":"int64","optional":false,"field":"ts_ms"}],"optional":false,"name":"io.debezium.connector.common.Heartbeat","version":1},"payload":{"ts_ms":1732900000123}}`},
		{"string values", StringConverterClass, StringConverterClass, "",
			`Struct{serverName=order_db}`, `Struct{ts_ms=1732900000123}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := map[string]string{
				"transforms":             "outbox",
				"transforms.outbox.type": EventRouterClass,
				"topic.prefix":           "order_db",
			}
			if c.keyConv != "" {
				m["key.converter"] = c.keyConv
				m["value.converter"] = c.valueConv
			}
			if c.schemas != "" {
				m["key.converter.schemas.enable"] = c.schemas
				m["value.converter.schemas.enable"] = c.schemas
			}
			cfg, _, err := ParseConfig(m)
			if err != nil {
				t.Fatal(err)
			}
			r, err := New(cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			rec := r.Heartbeat("__debezium-heartbeat.order_db", now)
			if rec.Topic != "__debezium-heartbeat.order_db" || rec.Partition != 0 {
				t.Errorf("topic %s partition %d", rec.Topic, rec.Partition)
			}
			if string(rec.Key) != c.key {
				t.Errorf("key\n got %s\nwant %s", rec.Key, c.key)
			}
			if string(rec.Value) != c.value {
				t.Errorf("value\n got %s\nwant %s", rec.Value, c.value)
			}
		})
	}
}
