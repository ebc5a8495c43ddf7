package router

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/outboxrelay/outboxrelay/capture"
)

// logRouter builds a Router over the fixture config with overrides and
// returns it with its captured log.
func logRouter(t testing.TB, overrides map[string]string) (*Router, *bytes.Buffer) {
	t.Helper()
	cfg, _, err := ParseConfig(withOverrides(connectorConfig(t), overrides))
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	r, err := New(cfg, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return r, &logs
}

func TestRouteOperations(t *testing.T) {
	update := func() *Event { e := ordersRow(); e.Row.Op = capture.OpUpdate; return e }
	tests := []struct {
		name     string
		behavior string
		ev       *Event
		records  int
		log      string // expected level in the log, "" for none
		fatal    bool
	}{
		{"insert", "warn", ordersRow(), 1, "", false},
		{"snapshot read", "warn", func() *Event { e := ordersRow(); e.Row.Op = capture.OpRead; return e }(), 1, "", false},
		{"delete dropped silently", "fatal", func() *Event { e := ordersRow(); e.Row.Op = capture.OpDelete; return e }(), 0, "", false},
		{"update warn", "warn", update(), 0, "level=WARN", false},
		{"update error", "error", update(), 0, "level=ERROR", false},
		{"update fatal", "fatal", update(), 0, "", true},
		{"key-changing update routed", "fatal", func() *Event { e := update(); e.Row.KeyChanged = true; return e }(), 1, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, logs := logRouter(t, map[string]string{"transforms.outbox.table.op.invalid.behavior": tt.behavior})
			dst := make([]Record, 0, 4)
			recs, err := r.Route(tt.ev, dst)
			var rowErr *RowError
			if tt.fatal {
				if !errors.As(err, &rowErr) || !rowErr.Fatal || rowErr.ConfigKey != "transforms.outbox.table.op.invalid.behavior" {
					t.Fatalf("err = %#v, want a fatal RowError naming table.op.invalid.behavior", err)
				}
				if rowErr.EventID != "0195a3f2-7c1e-7d3a-9b4f-2e8c5d6a1b90" {
					t.Errorf("fatal error lacks the event id: %v", err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if len(recs) != tt.records {
				t.Errorf("%d records, want %d", len(recs), tt.records)
			}
			if tt.log == "" && logs.Len() > 0 || tt.log != "" && !strings.Contains(logs.String(), tt.log) {
				t.Errorf("log = %q, want %q", logs.String(), tt.log)
			}
			if tt.log != "" && !strings.Contains(logs.String(), "event_id=0195a3f2") {
				t.Errorf("log does not name the event id: %q", logs.String())
			}
		})
	}
}

func TestRouteRowErrors(t *testing.T) {
	tests := []struct {
		name      string
		overrides map[string]string
		ev        *Event
		column    string
		key       string
		reason    string
	}{
		{"missing id column", nil, without(ordersRow(), "message_id"), "message_id", "transforms.outbox.table.field.event.id", "no column"},
		{"missing key column", nil, without(ordersRow(), "aggregate_id"), "aggregate_id", "transforms.outbox.table.field.event.key", "no column"},
		{"missing payload column", nil, without(ordersRow(), "payload"), "payload", "transforms.outbox.table.field.event.payload", "no column"},
		{"missing route column", nil, without(ordersRow(), "aggregate_type"), "aggregate_type", "transforms.outbox.route.by.field", "no column"},
		{"null route", nil, ordersRow(nullCol("aggregate_type", 25)), "aggregate_type", "transforms.outbox.route.by.field", "NULL"},
		{"illegal topic", nil, outboxRow("a b", "1", "t", "{}"), "aggregate_type", "transforms.outbox.route.by.field", "legal"},
		{"missing header placement column", nil, without(ordersRow(), "event_type"), "event_type", "transforms.outbox.table.fields.additional.placement", "no column"},
		{"missing timestamp column", map[string]string{"transforms.outbox.table.field.event.timestamp": "ts"}, ordersRow(), "ts", "transforms.outbox.table.field.event.timestamp", "no column"},
		{"timestamp of wrong type", map[string]string{"transforms.outbox.table.field.event.timestamp": "status"}, ordersRow(), "status", "transforms.outbox.table.field.event.timestamp", "bigint"},
		{"timestamp infinity", map[string]string{"transforms.outbox.table.field.event.timestamp": "created_at"}, ordersRow(col("created_at", oidTimestampTZ, "infinity")), "created_at", "transforms.outbox.table.field.event.timestamp", "infinity"},
		{"partition not integer", map[string]string{"transforms.outbox.table.fields.additional.placement": "status:partition"}, ordersRow(), "status", "transforms.outbox.table.fields.additional.placement", "integer column"},
		{"partition null", map[string]string{"transforms.outbox.table.fields.additional.placement": "retry_count:partition"}, ordersRow(nullCol("retry_count", oidInt4)), "retry_count", "transforms.outbox.table.fields.additional.placement", "NULL"},
		{"partition negative", map[string]string{"transforms.outbox.table.fields.additional.placement": "retry_count:partition"}, ordersRow(col("retry_count", oidInt4, "-1")), "retry_count", "transforms.outbox.table.fields.additional.placement", "between 0"},
		{"unchanged toast payload", nil, func() *Event {
			e := ordersRow(capture.Column{Name: "payload", OID: oidJSONB, Unchanged: true})
			e.Row.Op, e.Row.KeyChanged = capture.OpUpdate, true
			return e
		}(), "payload", "transforms.outbox.table.field.event.payload", "REPLICA IDENTITY FULL"},
		{"bad bytea header", map[string]string{"transforms.outbox.table.fields.additional.placement": "bin:header"}, ordersRow(col("bin", oidBytea, `\xabc`)), "bin", "transforms.outbox.table.fields.additional.placement", "odd number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := logRouter(t, tt.overrides)
			dst := []Record{{Topic: "earlier"}}
			got, err := r.Route(tt.ev, dst)
			var rowErr *RowError
			if !errors.As(err, &rowErr) {
				t.Fatalf("err = %v, want a *RowError", err)
			}
			if len(got) != 1 || got[0].Topic != "earlier" {
				t.Errorf("dst changed on error: %+v", got)
			}
			if rowErr.Column != tt.column || rowErr.ConfigKey != tt.key || !strings.Contains(rowErr.Reason, tt.reason) || rowErr.Fatal {
				t.Errorf("error = %#v, want column %q, key %q, reason containing %q", rowErr, tt.column, tt.key, tt.reason)
			}
			msg := err.Error()
			for _, part := range []string{"16/B374D848", "public.outbox", tt.column, tt.key} {
				if !strings.Contains(msg, part) {
					t.Errorf("message %q does not name %q", msg, part)
				}
			}
			if tt.column != "message_id" && !strings.Contains(msg, "0195a3f2-7c1e-7d3a-9b4f-2e8c5d6a1b90") {
				t.Errorf("message %q does not name the event id", msg)
			}
		})
	}
}

func TestRouteMissingPlacementIgnored(t *testing.T) {
	r, _ := logRouter(t, map[string]string{
		"transforms.outbox.table.field.additional.missing":    "ignore",
		"transforms.outbox.table.fields.additional.placement": "event_type:header:eventType,gone:envelope,gone2:partition,status:envelope",
	})
	rec := routeOne(t, r, without(ordersRow(), "event_type"))
	if len(rec.Headers) != 1 || rec.Headers[0].Key != "id" {
		t.Errorf("headers = %q, want only id", rec.Headers)
	}
	if want := `{"payload":{"orderId":9191642889,"payableAmount":199.00},"status":"PENDING"}`; string(rec.Value) != want {
		t.Errorf("value = %s, want %s", rec.Value, want)
	}
	if rec.Partition != -1 {
		t.Errorf("partition = %d, want -1", rec.Partition)
	}
}

func TestRouteTimestamp(t *testing.T) {
	tests := []struct {
		name string
		v    capture.Column
		want time.Time
	}{
		{"timestamp read as UTC", col("ts", oidTimestamp, "2025-03-14 09:26:53.123456"), time.Date(2025, 3, 14, 9, 26, 53, 123456000, time.UTC)},
		{"timestamp without fraction", col("ts", oidTimestamp, "2025-03-14 09:26:53"), time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC)},
		{"timestamptz with minutes offset", col("ts", oidTimestampTZ, "2025-03-14 15:56:53.1+05:30"), time.Date(2025, 3, 14, 10, 26, 53, 100000000, time.UTC)},
		{"timestamptz negative offset", col("ts", oidTimestampTZ, "2025-03-14 01:26:53-08"), time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC)},
		{"epoch milliseconds", col("ts", oidInt8, "1741944413589"), time.UnixMilli(1741944413589)},
		{"NULL falls back to the commit time", nullCol("ts", oidTimestamp), testCommitTime},
	}
	r, _ := logRouter(t, map[string]string{"transforms.outbox.table.field.event.timestamp": "ts"})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := routeOne(t, r, ordersRow(tt.v))
			if !rec.Timestamp.Equal(tt.want) {
				t.Errorf("timestamp = %v, want %v", rec.Timestamp, tt.want)
			}
		})
	}
}

func TestRouteTraceHeaders(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	tests := []struct {
		name, text string
		want       []string // header keys
		warn       bool
	}{
		{"bare traceparent", tp, []string{"traceparent", "id", "eventType"}, false},
		{"properties", "traceparent=" + tp + "\n", []string{"traceparent", "id", "eventType"}, false},
		{"properties with state", "# c\ntraceparent: " + tp + "\r\ntracestate=a=b\n", []string{"traceparent", "tracestate", "id", "eventType"}, false},
		{"invalid", "traceparent=00-zz", []string{"id", "eventType"}, true},
		{"all-zero trace id", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", []string{"id", "eventType"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, logs := logRouter(t, map[string]string{"transforms.outbox.tracing.span.context.field": "span"})
			rec := routeOne(t, r, ordersRow(col("span", 25, tt.text)))
			var keys []string
			for _, h := range rec.Headers {
				keys = append(keys, h.Key)
			}
			if strings.Join(keys, ",") != strings.Join(tt.want, ",") {
				t.Errorf("headers %q, want %q", keys, tt.want)
			}
			if got := logs.Len() > 0; got != tt.warn {
				t.Errorf("warned = %v, want %v (%s)", got, tt.warn, logs)
			}
		})
	}
}

func TestRouteExtendedHeadersRandomRunID(t *testing.T) {
	cfg, _, err := ParseConfig(withOverrides(connectorConfig(t), map[string]string{"extended.headers.enabled": "true"}))
	if err != nil {
		t.Fatal(err)
	}
	r1, _ := New(cfg, nil)
	r2, _ := New(cfg, nil)
	id1, id2 := r1.Config().RunID, r2.Config().RunID
	if len(id1) != 36 || id1 == id2 {
		t.Errorf("run ids %q and %q: want two different UUIDs", id1, id2)
	}
}

// Regression: a placement header whose value is appended after the arena
// grew must not change a header value cut out before the growth.
func TestRouteArenaGrowthKeepsEarlierSlices(t *testing.T) {
	r, _ := logRouter(t, map[string]string{"transforms.outbox.table.fields.additional.placement": "event_type:header,big:header"})
	r.buf = make([]byte, 0, 8) // force growth during the row
	big := strings.Repeat("x", 10000)
	rec := routeOne(t, r, ordersRow(col("big", 25, big)))
	if string(rec.Headers[0].Value) != "0195a3f2-7c1e-7d3a-9b4f-2e8c5d6a1b90" || string(rec.Headers[1].Value) != "paid" || string(rec.Headers[2].Value) != big {
		t.Errorf("headers corrupted: %q", rec.Headers[:2])
	}
	if cap(rec.Key) != len(rec.Key) {
		t.Errorf("key slice has spare capacity %d: appending to it would overwrite the value", cap(rec.Key)-len(rec.Key))
	}
}

// The record must not alias the decoder's memory: Column.Text is reused by
// the caller after Route returns.
func TestRouteCopiesInput(t *testing.T) {
	r, _ := logRouter(t, map[string]string{"transforms.outbox.table.expand.json.payload": "false", "value.converter": StringConverterClass})
	ev := ordersRow()
	rec := routeOne(t, r, ev)
	for i := range ev.Row.Columns {
		for j := range ev.Row.Columns[i].Text {
			ev.Row.Columns[i].Text[j] = '#'
		}
	}
	if string(rec.Key) != "9191642889" || string(rec.Value) != ordersPayload || string(rec.Headers[1].Value) != "paid" || rec.Topic != "orders" {
		t.Errorf("record changed with its input: %+v", rec)
	}
}

func TestRouteTopicCacheBounded(t *testing.T) {
	r, _ := logRouter(t, nil)
	for i := 0; i < maxCachedTopics+10; i++ {
		ev := ordersRow(col("aggregate_type", 25, "t"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+itoa(i)))
		if _, err := r.Route(ev, nil); err != nil {
			t.Fatal(err)
		}
	}
	if len(r.topics) > maxCachedTopics {
		t.Errorf("%d cached topics, bound is %d", len(r.topics), maxCachedTopics)
	}
}

func itoa(i int) string { return string(appendInt(nil, i)) }

func appendInt(b []byte, i int) []byte {
	if i >= 10 {
		b = appendInt(b, i/10)
	}
	return append(b, byte('0'+i%10))
}

func TestDecodeBytea(t *testing.T) {
	tests := []struct{ in, want string }{
		{`\x`, ""},
		{`\x00ff10`, "\x00\xff\x10"},
		{`\xABcd`, "\xab\xcd"},
		{`abc\\d\001`, "abc\\d\x01"}, // escape format
	}
	for _, tt := range tests {
		got, err := decodeBytea(nil, []byte(tt.in))
		if err != nil || string(got) != tt.want {
			t.Errorf("decodeBytea(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{`\x0`, `\xzz`, `a\b`} {
		if _, err := decodeBytea(nil, []byte(bad)); err == nil {
			t.Errorf("decodeBytea(%q): no error", bad)
		}
	}
}

// Regression (found by FuzzRoute): integer text "00" was written into JSON
// as is, because only its first number token was checked, giving invalid
// JSON in an envelope.
func TestJSONValueRejectsIntegerJunk(t *testing.T) {
	var scratch []byte
	for _, text := range []string{"00", "1x", "", "1 "} {
		if got, err := appendJSONValue(nil, &capture.Column{OID: oidInt8, Text: []byte(text)}, "precise", &scratch); err == nil {
			t.Errorf("integer text %q accepted as %q", text, got)
		}
	}
}

func TestJSONValueTypes(t *testing.T) {
	tests := []struct {
		v    capture.Column
		mode string
		want string
	}{
		{capture.Column{OID: oidInt4, Text: []byte("-5")}, "precise", "-5"},
		{capture.Column{OID: oidBool, Text: []byte("f")}, "precise", "false"},
		{capture.Column{OID: oidFloat8, Text: []byte("NaN")}, "precise", `"NaN"`},
		{capture.Column{OID: oidFloat8, Text: []byte("1.5")}, "precise", "1.5"},
		{capture.Column{OID: oidNumeric, Text: []byte("199.00")}, "string", `"199.00"`},
		{capture.Column{OID: oidNumeric, Text: []byte("199.00")}, "double", "199.00"},
		{capture.Column{OID: oidNumeric, Text: []byte("NaN")}, "double", `"NaN"`},
		{capture.Column{OID: oidBytea, Text: []byte(`\x6869`)}, "precise", `"aGk="`},
		{capture.Column{OID: oidUUID, Text: []byte("ABCDEF00-0000-0000-0000-000000000000")}, "precise", `"abcdef00-0000-0000-0000-000000000000"`},
		{capture.Column{OID: oidJSONB, Text: []byte(`{"a": 1}`)}, "precise", `"{\"a\": 1}"`},
		{capture.Column{OID: 25, Null: true}, "precise", "null"},
	}
	for _, tt := range tests {
		var scratch []byte
		got, err := appendJSONValue(nil, &tt.v, tt.mode, &scratch)
		if err != nil || string(got) != tt.want {
			t.Errorf("appendJSONValue(%d %q, %s) = %s, %v; want %s", tt.v.OID, tt.v.Text, tt.mode, got, err, tt.want)
		}
	}
}

// FuzzRoute routes arbitrary rows through a config that uses every
// feature; Route must never panic, and a record's bytes must be valid JSON
// whenever the value converter is JsonConverter.
func FuzzRoute(f *testing.F) {
	f.Add(uint8(0), "orders", "9191642889", "paid", []byte(ordersPayload), uint32(oidJSONB), "0", "2025-03-14 09:26:53+00", false)
	f.Add(uint8(1), "payments", "", "", []byte("not json"), uint32(25), "-1", "x", true)
	f.Add(uint8(2), "(?<x>)", "\x00", "\xff", []byte(`[1,`), uint32(oidBytea), "99999999999", "", false)
	f.Add(uint8(3), "", "k", "t", []byte(`\x00ff`), uint32(oidBytea), "7", "2025-03-14 09:26:53", true)
	configs := []map[string]string{
		{},
		{"transforms.outbox.table.fields.additional.placement": "event_type:envelope:type,n:partition,event_type:header,ts:header", "transforms.outbox.route.tombstone.on.empty.payload": "true"},
		{"value.converter": JSONConverterClass, "key.converter": JSONConverterClass, "transforms.outbox.table.fields.additional.placement": "event_type:envelope,n:envelope",
			"transforms.outbox.table.json.payload.null.behavior": "optional_bytes"},
		{"value.converter": StringConverterClass, "transforms.outbox.table.field.event.timestamp": "ts", "extended.headers.enabled": "true",
			"transforms.outbox.route.topic.regex": `(?<a>[a-z]*)(\d*)`, "transforms.outbox.route.topic.replacement": `p.${a}$2`},
	}
	routers := make([]*Router, len(configs))
	for i, c := range configs {
		routers[i] = newTestRouter(f, withOverrides(connectorConfig(f), c))
	}
	f.Fuzz(func(t *testing.T, which uint8, route, key, typ string, payload []byte, payloadOID uint32, n, ts string, nullKey bool) {
		r := routers[int(which)%len(routers)]
		ev := ordersRow(
			col("aggregate_type", 25, route),
			col("aggregate_id", 25, key),
			col("event_type", 25, typ),
			capture.Column{Name: "payload", OID: payloadOID, Text: payload, Null: payload == nil},
			col("n", oidInt8, n),
			col("ts", oidTimestampTZ, ts),
		)
		if nullKey {
			ev.Row.Columns[2] = nullCol("aggregate_id", 25)
		}
		// The five operations in the order the corpus's which selects them.
		ev.Row.Op = [...]capture.Op{capture.OpCreate, capture.OpRead, capture.OpUpdate, capture.OpDelete, capture.OpMessage}[which%5]
		ev.Row.KeyChanged = which&8 != 0
		recs, err := r.Route(ev, nil)
		if err != nil {
			var rowErr *RowError
			if !errors.As(err, &rowErr) {
				t.Fatalf("error %v is not a *RowError", err)
			}
			return
		}
		for _, rec := range recs {
			if err := CheckTopicName(rec.Topic); err != nil {
				t.Fatalf("illegal topic routed: %v", err)
			}
			if r.cfg.ValueConverter != ConverterString && rec.Value != nil && !jsonValid(rec.Value) {
				t.Fatalf("value %q is not JSON", rec.Value)
			}
			if r.cfg.KeyConverter != ConverterString && !jsonValid(rec.Key) {
				t.Fatalf("key %q is not JSON", rec.Key)
			}
		}
	})
}
