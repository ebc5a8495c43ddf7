package router

import (
	"bytes"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/outboxrelay/outboxrelay/capture"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/router")

// goldenCase is one input row and config; its golden file shows the config
// keys that differ from the fixture connector, the row and the records (or
// the error), so a reviewer can read the behaviour without running tests.
type goldenCase struct {
	name      string // file name without .golden
	about     string // what the case pins, and the spec row
	overrides map[string]string
	ev        *Event
}

func goldenCases() []goldenCase {
	return []goldenCase{
		{name: "fixture-orders", about: "fixtures README, first example: topic orders, id and eventType headers, string key, expanded payload with 199.00 kept (spec 2, 3)",
			ev: ordersRow()},
		{name: "fixture-payments", about: "fixtures README, second example: key order is PostgreSQL's jsonb order (spec 3)",
			ev: outboxRow("payments", "pay-889900", "PaymentSucceeded", paymentsPayload)},
		{name: "expand-off-jsonb-string", about: "expansion off: the value is a JSON string holding PostgreSQL's jsonb text, separators included (spec 2, value)",
			overrides: map[string]string{"transforms.outbox.table.expand.json.payload": "false"}, ev: ordersRow()},
		{name: "expand-nested-lossless", about: "expansion keeps nulls, empty arrays, big integers, exponents and escapes; nested objects and arrays (spec 3)",
			ev: ordersRow(col("payload", oidJSONB, `{"a": null, "b": [], "c": {"d": [1, 2.50, -3e+10]}, "big": 123456789012345678901234567890, "s": "x\"y\u00e9\n"}`))},
		{name: "expand-top-level-array", about: "a top-level array is expanded (Debezium fails the task) (spec 3)",
			ev: ordersRow(col("payload", oidJSONB, `[1, "two", {"three": 3}]`))},
		{name: "expand-scalar", about: "a scalar JSON payload is expanded too (spec 3)",
			ev: ordersRow(col("payload", oidJSONB, `"just a string"`))},
		{name: "expand-text-not-json", about: "a text payload that is not JSON falls back to the escaped string, with a warning (spec 3)",
			ev: ordersRow(col("payload", 25, "not {json} \"at\" all\t"))},
		{name: "expand-text-json-whitespace", about: "a text payload with JSON and arbitrary whitespace is compacted (spec 3)",
			ev: ordersRow(col("payload", 25, "{\n  \"k\" :\t[ 1 , 2 ]\r\n}\n"))},
		{name: "key-json-no-schema", about: "key.converter=JsonConverter, schemas off: the text key is a quoted JSON string (spec 2, key)",
			overrides: map[string]string{"key.converter": JSONConverterClass, "key.converter.schemas.enable": "false"}, ev: ordersRow()},
		{name: "key-json-null", about: "JsonConverter without schemas writes a NULL key as the 4 bytes null (spec 2, key)",
			overrides: map[string]string{"key.converter": JSONConverterClass, "key.converter.schemas.enable": "false"}, ev: ordersRow(nullCol("aggregate_id", 25))},
		{name: "key-string-null", about: "StringConverter keeps a NULL key null (spec 2, key)",
			ev: ordersRow(nullCol("aggregate_id", 25))},
		{name: "key-json-schema-string", about: "JsonConverter with schemas (Connect's default when schemas.enable is unset): string key (spec 2, key)",
			overrides: map[string]string{"key.converter": JSONConverterClass}, ev: ordersRow()},
		{name: "key-json-schema-uuid", about: "JsonConverter with schemas, uuid key: io.debezium.data.Uuid version 1 after optional (spec 2, key)",
			overrides: map[string]string{"key.converter": JSONConverterClass, "transforms.outbox.table.field.event.key": "message_id"}, ev: ordersRow()},
		{name: "key-json-schema-int", about: "JsonConverter with schemas, integer keys: int2/int4/int8 are int16/int32/int64 (spec 2, key)",
			overrides: map[string]string{"key.converter": JSONConverterClass, "transforms.outbox.table.field.event.key": "k8"},
			ev:        ordersRow(col("k8", oidInt8, "-9223372036854775808"))},
		{name: "key-json-schema-int2-nullable", about: "JsonConverter with schemas, smallint key of a nullable column: optional true",
			overrides: map[string]string{"key.converter": JSONConverterClass, "transforms.outbox.table.field.event.key": "k2"},
			ev:        ordersRow(capture.Column{Name: "k2", OID: oidInt2, Text: []byte("42"), Nullable: true})},
		{name: "value-string-converter", about: "value.converter=StringConverter: the expanded payload's compact text (spec 2, value)",
			overrides: map[string]string{"value.converter": StringConverterClass}, ev: ordersRow()},
		{name: "value-string-converter-unexpanded", about: "StringConverter without expansion: PostgreSQL's jsonb text as is (spec 2, value)",
			overrides: map[string]string{"value.converter": StringConverterClass, "transforms.outbox.table.expand.json.payload": "false"}, ev: ordersRow()},
		{name: "value-null-payload", about: "NULL payload without the tombstone option: JsonConverter writes null (spec 2, value)",
			ev: ordersRow(nullCol("payload", oidJSONB))},
		{name: "value-null-payload-string-converter", about: "NULL payload, StringConverter: a null value (spec 2, value)",
			overrides: map[string]string{"value.converter": StringConverterClass}, ev: ordersRow(nullCol("payload", oidJSONB))},
		{name: "value-schema-unexpanded", about: "JsonConverter with schemas, expansion off: the payload is a string with io.debezium.data.Json (spec 2, value)",
			overrides: map[string]string{"value.converter": JSONConverterClass, "transforms.outbox.table.expand.json.payload": "false"}, ev: ordersRow()},
		{name: "value-schema-expanded-object", about: "JsonConverter with schemas, expanded object: schema inferred as Debezium's JsonSchemaData does (struct named after the payload column, int64/double/string, nested struct names, nulls and empty arrays left out of the schema)",
			overrides: map[string]string{"value.converter": JSONConverterClass},
			ev:        ordersRow(col("payload", oidJSONB, `{"id": 7, "orderId": 9191642889, "amount": 199.00, "paid": true, "note": null, "tags": [], "lines": [{"sku": "a", "qty": 1}, {"sku": "b", "gift": true}], "ship": {"city": "Oslo"}, "codes": ["x", "y"]}`))},
		{name: "value-schema-null-optional-bytes", about: "table.json.payload.null.behavior=optional_bytes: null fields get an optional bytes schema (spec 1)",
			overrides: map[string]string{"value.converter": JSONConverterClass, "transforms.outbox.table.json.payload.null.behavior": "optional_bytes"},
			ev:        ordersRow(col("payload", oidJSONB, `{"a": null, "b": 1}`))},
		{name: "value-schema-empty-array-optional-string", about: "table.json.payload.empty.array.behavior=optional_string (Debezium 3.7): empty arrays get an optional array of optional strings, nested ones too (spec 1)",
			overrides: map[string]string{"value.converter": JSONConverterClass, "transforms.outbox.table.json.payload.empty.array.behavior": "optional_string"},
			ev:        ordersRow(col("payload", oidJSONB, `{"tags": [], "b": 1, "inner": {"none": []}, "grid": [[], []]}`))},
		{name: "value-schema-mixed-array-fallback", about: "JsonConverter with schemas: an array mixing types has no Debezium schema, so the payload falls back to the string (with a warning)",
			overrides: map[string]string{"value.converter": JSONConverterClass},
			ev:        ordersRow(col("payload", oidJSONB, `{"a": [1, "x"]}`))},
		{name: "envelope", about: "envelope placements: {payload, aliases…} with payload first, then config order (spec 2, value)",
			overrides: map[string]string{"transforms.outbox.table.fields.additional.placement": "event_type:header:eventType, retry_count:ENVELOPE:retries, status:envelope, sent_at:envelope"},
			ev:        ordersRow()},
		{name: "envelope-schema", about: "envelope placements with JsonConverter schemas: struct named <prefix>.<schema>.<table>.<route value>.Value",
			overrides: map[string]string{"value.converter": JSONConverterClass, "transforms.outbox.table.fields.additional.placement": "event_type:envelope:type,retry_count:envelope"},
			ev:        ordersRow()},
		{name: "headers-types", about: "header values as SimpleHeaderConverter writes them: uuid lower-case, integers, booleans, bytea Base64, numeric text, NULL (spec 2, headers)",
			overrides: map[string]string{"transforms.outbox.table.fields.additional.placement": "u:header,i:header,b:header,f:header,bin:header,n:header,missing_value:header,id:header"},
			ev: ordersRow(col("u", oidUUID, "0195A3F2-7C1E-7D3A-9B4F-2E8C5D6A1B90"), col("i", oidInt8, "-42"), col("b", oidBool, "t"), col("f", oidBool, "f"),
				col("bin", oidBytea, `\x00ff10`), col("n", oidNumeric, "199.00"), nullCol("missing_value", 25), col("id", oidInt4, "5"))},
		{name: "headers-extended", about: "extended.headers.enabled=true adds Debezium's context headers first (spec 2, headers)",
			overrides: map[string]string{"extended.headers.enabled": "true"}, ev: ordersRow()},
		{name: "headers-trace", about: "a span context column (Java properties text) becomes traceparent/tracestate headers after the context headers and before id (spec 1, tracing)",
			ev: ordersRow(col("tracingspancontext", 25, "#Fri Mar 14 09:26:53 UTC 2025\ntraceparent=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\ntracestate=vendor\\=x\n"))},
		{name: "partition-placement", about: "partition placement: the last one wins, its alias is ignored (spec 1)",
			overrides: map[string]string{"transforms.outbox.table.fields.additional.placement": "retry_count:partition:ignored,version:partition"},
			ev:        ordersRow(col("version", oidInt4, "2"))},
		{name: "route-regex-groups", about: "route.topic.regex with a Java named group, ${name} and $2 in the replacement (spec 1; \\$ is in TestTopicRegex, a '$' is no legal topic character)",
			overrides: map[string]string{"transforms.outbox.route.topic.regex": `(?<domain>[a-z]+)\.(v\d+)`, "transforms.outbox.route.topic.replacement": `events.${domain}.$2`},
			ev:        outboxRow("orders.v2", "1", "paid", `{}`)},
		{name: "route-regex-no-match", about: "a route value the regex does not match whole is the topic as is, case kept (spec 1)",
			overrides: map[string]string{"transforms.outbox.route.topic.regex": `[a-z]+`, "transforms.outbox.route.topic.replacement": `x.$0`},
			ev:        outboxRow("Orders", "1", "paid", `{}`)},
		{name: "route-default-replacement", about: "default route.topic.replacement: outbox.event.${routedByValue} (spec 1)",
			overrides: map[string]string{"transforms.outbox.route.topic.replacement": "-"}, ev: ordersRow()},
		{name: "tombstone-null-payload", about: "route.tombstone.on.empty.payload: a NULL payload gives a tombstone with key, headers and topic (spec 1)",
			overrides: map[string]string{"transforms.outbox.route.tombstone.on.empty.payload": "true"}, ev: ordersRow(nullCol("payload", oidJSONB))},
		{name: "tombstone-blank-text", about: "route.tombstone.on.empty.payload: text that is empty after trimming is a tombstone too (spec 1)",
			overrides: map[string]string{"transforms.outbox.route.tombstone.on.empty.payload": "true"}, ev: ordersRow(col("payload", 25, " \t\n"))},
		{name: "tombstone-json-null-is-not-empty", about: "route.tombstone.on.empty.payload: JSON null text is not empty (spec 1)",
			overrides: map[string]string{"transforms.outbox.route.tombstone.on.empty.payload": "true"}, ev: ordersRow(col("payload", oidJSONB, "null"))},
		{name: "timestamp-column-timestamptz", about: "table.field.event.timestamp on a timestamptz column (accepted; Debezium fails) (spec 1)",
			overrides: map[string]string{"transforms.outbox.table.field.event.timestamp": "created_at"},
			ev:        ordersRow(col("created_at", oidTimestampTZ, "2025-03-14 11:26:53.5+02"))},
		{name: "timestamp-column-epoch-ms", about: "table.field.event.timestamp on a bigint of epoch milliseconds (spec 1)",
			overrides: map[string]string{"transforms.outbox.table.field.event.timestamp": "ts"},
			ev:        ordersRow(col("ts", oidInt8, "1700000000123"))},
		{name: "error-null-route", about: "a NULL route value stops with an error naming the event id and column (spec 2, topic)",
			ev: ordersRow(nullCol("aggregate_type", 25))},
		{name: "error-bad-topic", about: "a route value that gives an illegal topic stops with an error naming the event id and route column",
			ev: outboxRow("orders/eu", "1", "paid", `{}`)},
		{name: "error-missing-payload-column", about: "a configured column the table lacks is a clear error (spec 1, spec 4 ALTER TABLE)",
			ev: without(ordersRow(), "payload")},
		{name: "update-key-changed", about: "an update that changed the primary key is a delete plus a create: the create is routed (spec 4), with the old key in a __debezium.oldkey header first, as Debezium's connector adds it",
			ev: func() *Event {
				e := ordersRow()
				e.Row.Op, e.Row.KeyChanged = capture.OpUpdate, true
				e.Row.OldKey = []capture.Column{{Name: "message_id", OID: 2950, Text: []byte("0195a3f2-0000-7000-8000-000000000001")}}
				return e
			}()},
		{name: "snapshot-read", about: "a snapshot read (op r) is routed like an insert; without a commit time the processing time is the timestamp (spec 2)",
			ev: func() *Event { e := ordersRow(); e.Row.Op = capture.OpRead; e.CommitTime = time.Time{}; return e }()},
	}
}

func TestGolden(t *testing.T) {
	base := connectorConfig(t)
	for _, gc := range goldenCases() {
		t.Run(gc.name, func(t *testing.T) {
			got := renderGolden(t, gc, base)
			path := filepath.Join("..", "testdata", "router", gc.name+".golden")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./router -run TestGolden -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from the golden file; run with -update and review the diff.\ngot:\n%s\nwant:\n%s", path, got, want)
			}
		})
	}
}

// renderGolden routes the case and writes config, row and result as text.
func renderGolden(t *testing.T, gc goldenCase, base map[string]string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s\n", gc.about)
	m := withOverrides(base, gc.overrides)
	b.WriteString("\n## config (router keys of the connector JSON")
	if len(gc.overrides) > 0 {
		b.WriteString("; * = changed from testdata/router/connector-outbox.json")
	}
	b.WriteString(")\n")
	var keys []string
	for k := range m {
		if routerKey(k) {
			keys = append(keys, k)
		}
	}
	for k := range gc.overrides {
		if _, ok := m[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		mark := " "
		if _, ok := gc.overrides[k]; ok {
			mark = "*"
		}
		v, ok := m[k]
		if !ok {
			v = "(unset)"
		}
		fmt.Fprintf(&b, "%s %s = %s\n", mark, k, v)
	}

	ev := gc.ev
	fmt.Fprintf(&b, "\n## row: op %s of %s, commit LSN %s", ev.Row.Op, ev.Table(), ev.CommitLSN)
	if ev.Row.KeyChanged {
		b.WriteString(", primary key changed")
	}
	fmt.Fprintf(&b, ", commit time %s\n", showTime(ev.CommitTime))
	for _, c := range ev.Row.Columns {
		fmt.Fprintf(&b, "  %-18s %-11s %s\n", c.Name, oidName(c.OID), showValue(c))
	}
	for _, c := range ev.Row.OldKey {
		fmt.Fprintf(&b, "  old key: %-9s %-11s %s\n", c.Name, oidName(c.OID), showValue(c))
	}

	cfg, warnings, err := ParseConfig(m)
	if err != nil {
		t.Fatalf("ParseConfig: %v", err)
	}
	for _, w := range warnings {
		fmt.Fprintf(&b, "config warning: %s\n", w)
	}
	cfg.RunID = "3b241101-e2bb-4255-8caf-4136c566a962"
	var logs bytes.Buffer
	r, err := New(cfg, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	})))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	recs, err := r.Route(ev, nil)
	if logs.Len() > 0 {
		fmt.Fprintf(&b, "\n## log\n%s", logs.String())
	}
	if err != nil {
		fmt.Fprintf(&b, "\n## error\n%v\n", err)
		return b.Bytes()
	}
	fmt.Fprintf(&b, "\n## records: %d\n", len(recs))
	for i, rec := range recs {
		fmt.Fprintf(&b, "record %d\n", i)
		fmt.Fprintf(&b, "  topic      %s\n", rec.Topic)
		if rec.Partition < 0 {
			b.WriteString("  partition  producer's choice (murmur2 of the serialized key)\n")
		} else {
			fmt.Fprintf(&b, "  partition  %d\n", rec.Partition)
		}
		fmt.Fprintf(&b, "  timestamp  %s\n", showTime(rec.Timestamp))
		fmt.Fprintf(&b, "  event id   %s\n", rec.EventID)
		for _, h := range rec.Headers {
			fmt.Fprintf(&b, "  header     %s: %s\n", h.Key, showBytes(h.Value))
		}
		fmt.Fprintf(&b, "  key        %s\n", showBytes(rec.Key))
		fmt.Fprintf(&b, "  value      %s\n", showBytes(rec.Value))
	}
	return b.Bytes()
}

// routerKey reports whether a connector key shapes the router's output.
func routerKey(k string) bool {
	return strings.HasPrefix(k, "transforms") || strings.Contains(k, "converter") ||
		k == "topic.prefix" || k == "extended.headers.enabled" || k == "decimal.handling.mode"
}

func showTime(t time.Time) string {
	if t.IsZero() {
		return "none"
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func showValue(v capture.Column) string {
	if v.Null {
		return "NULL"
	}
	return showBytes(v.Text)
}

// showBytes prints bytes as text when they are printable UTF-8 and as a Go
// quoted string otherwise, so that every byte is visible.
func showBytes(p []byte) string {
	if p == nil {
		return "<null>"
	}
	if len(p) == 0 {
		return "<empty>"
	}
	s := string(p)
	if !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) || strings.TrimSpace(s) != s {
		return fmt.Sprintf("%q (Go quoted)", s)
	}
	return s
}

func oidName(oid uint32) string {
	names := map[uint32]string{oidBool: "bool", oidBytea: "bytea", oidInt8: "int8", oidInt2: "int2", oidInt4: "int4", 25: "text",
		oidJSON: "json", oidFloat8: "float8", oidTimestamp: "timestamp", oidTimestampTZ: "timestamptz", oidNumeric: "numeric", oidUUID: "uuid", oidJSONB: "jsonb", 1043: "varchar"}
	if n, ok := names[oid]; ok {
		return n
	}
	return fmt.Sprintf("oid %d", oid)
}
