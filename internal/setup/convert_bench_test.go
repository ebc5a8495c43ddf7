package setup

import (
	"context"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/outboxrelay/outboxrelay/capture"
	"github.com/outboxrelay/outboxrelay/registry"
	"github.com/outboxrelay/outboxrelay/router"
)

// BenchmarkRouteConvert measures what a record costs the session's
// goroutine before the sink, with each value converter of
// scripts/bench-converters on its payload (six fields, expanded): routing
// alone with the example's JsonConverter without schemas, and routing
// plus the registry converter stage for AvroConverter and
// JsonSchemaConverter (key and value, an in-process srfake registry,
// each schema registered once before the timer starts). The payload's
// numbers change from row to row, as the benchmark's table does.
func BenchmarkRouteConvert(b *testing.B) {
	reg := srfake.New()
	defer reg.Close()
	for _, side := range []struct{ name, class string }{
		{"json", ""},
		{"avro", router.AvroConverterClass},
		{"jsonschema", router.JSONSchemaConverterClass},
	} {
		b.Run(side.name, func(b *testing.B) {
			m := map[string]string{
				"topic.prefix": "order_db", "transforms": "outbox", "transforms.outbox.type": router.EventRouterClass,
				"transforms.outbox.table.field.event.id":              "message_id",
				"transforms.outbox.table.fields.additional.placement": "event_type:header:eventType",
				"transforms.outbox.table.expand.json.payload":         "true",
				"transforms.outbox.route.topic.replacement":           "${routedByValue}",
				"transforms.outbox.table.field.event.key":             "aggregate_id",
				"transforms.outbox.route.by.field":                    "aggregate_type",
			}
			if side.class != "" {
				for _, half := range []string{"key", "value"} {
					m[half+".converter"] = side.class
					m[half+".converter.schema.registry.url"] = reg.URL()
				}
			}
			rcfg, _, err := router.ParseConfig(m)
			if err != nil {
				b.Fatal(err)
			}
			rt, err := router.New(rcfg, nil)
			if err != nil {
				b.Fatal(err)
			}
			var conv *registry.Converter
			if side.class != "" {
				regCfg, err := registry.ParseConfig(m, rcfg.KeyRegistry, rcfg.ValueRegistry)
				if err != nil {
					b.Fatal(err)
				}
				if conv, err = registry.NewConverter(regCfg, Formats()); err != nil {
					b.Fatal(err)
				}
			}
			benchRouteConvert(b, rt, conv)
		})
	}
}

func benchRouteConvert(b *testing.B, rt *router.Router, conv *registry.Converter) {
	row := capture.Row{Op: capture.OpCreate, Table: "public.outbox", Columns: []capture.Column{
		{Name: "message_id", OID: 2950, Text: []byte("5f0b8a52-3c3e-4f0e-9b59-2b7c1c8f6a11")},
		{Name: "aggregate_type", OID: 25},
		{Name: "aggregate_id", OID: 25},
		{Name: "event_type", OID: 25, Text: []byte("created")},
		{Name: "payload", OID: 3802},
	}}
	ev := router.Event{Row: &row, CommitLSN: 0x1000, CommitTime: time.Now()}
	var payload []byte
	var recs []router.Record
	seq := 0
	types := [][]byte{[]byte("orders"), []byte("payments")}
	next := func() { // allocation-free: what allocs/op counts is the router's and the converter's
		g := int64(seq % 100)
		row.Columns[1].Text = types[g%2]
		row.Columns[2].Text = strconv.AppendInt(append(row.Columns[2].Text[:0], "agg-"...), g, 10)
		p := append(payload[:0], `{"a": `...)
		p = strconv.AppendInt(p, g, 10)
		p = strconv.AppendInt(append(p, `, "ts": `...), 1733600000000000+int64(seq), 10)
		p = strconv.AppendInt(append(p, `, "run": "bench", "seq": `...), int64(seq), 10)
		p = strconv.AppendInt(append(p, `, "aseq": `...), int64(seq/100), 10)
		p = strconv.AppendInt(append(p, `, "note": "order placed by customer `...), g, 10)
		payload = append(p, `"}`...)
		row.Columns[4].Text = payload
		seq++
	}
	ctx := context.Background()
	step := func() {
		next()
		var err error
		if recs, err = rt.Route(&ev, recs[:0]); err != nil || len(recs) != 1 {
			b.Fatalf("Route: %d records, %v", len(recs), err)
		}
		if conv != nil {
			if err := conv.Convert(ctx, &recs[0]); err != nil {
				b.Fatal(err)
			}
		}
	}
	for range 200 { // every subject registered, every shape seen
		step()
	}
	b.ReportAllocs()
	cpu := cpuTime()
	for b.Loop() {
		step()
	}
	b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
