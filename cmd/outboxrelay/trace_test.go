package main

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/outboxrelay/outboxrelay/consumer"
	"github.com/outboxrelay/outboxrelay/internal/testbed"
	"github.com/outboxrelay/outboxrelay/internal/testbed/otlprecv"
	"github.com/outboxrelay/outboxrelay/outbox"
)

// TestTraceEndToEnd: a service writes events through outbox.Writer inside
// its own spans, the relay (exporting over OTLP/gRPC to an in-process
// receiver) records db-log-write and the publish span of each, and the
// consumer handles each in a span that continues the trace: for every
// event the four spans form one trace, parent by parent, and the publish
// span names the topic, partition and offset the consumer read it at.
func TestTraceEndToEnd(t *testing.T) {
	recv := otlprecv.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.Endpoint)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	t.Setenv("OTEL_SERVICE_NAME", "outboxrelay-trace-test")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")

	admin := testbed.Admin(t)
	n := time.Now().UnixNano() % 1e9
	schema, topic := fmt.Sprintf("trace_%d", n), fmt.Sprintf("traced-%d", n)
	testbed.Exec(t, admin, `CREATE SCHEMA `+schema,
		`CREATE TABLE `+schema+`.outbox (message_id uuid PRIMARY KEY, aggregate_type text NOT NULL, aggregate_id text NOT NULL,
			event_type text NOT NULL, payload jsonb NOT NULL, tracingspancontext text)`,
		`CREATE TABLE `+schema+`.processed_events (consumer text NOT NULL, event_id text NOT NULL,
			processed_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (consumer, event_id))`,
		`GRANT USAGE ON SCHEMA `+schema+` TO debezium`, `GRANT SELECT ON `+schema+`.outbox TO debezium`,
		`CREATE PUBLICATION `+schema+` FOR TABLE `+schema+`.outbox`)
	t.Cleanup(func() {
		testbed.DropSlot(t, admin, schema)
		_, _ = admin.Exec(context.Background(), `DROP PUBLICATION IF EXISTS `+schema)
		_, _ = admin.Exec(context.Background(), `DROP SCHEMA `+schema+` CASCADE`)
	})
	startRelay(t, exampleConfig(t, map[string]any{"slot.name": schema, "publication.name": schema, "table.include.list": schema + ".outbox"}))
	testbed.WaitSlotActive(t, admin, schema, 30*time.Second)

	// The service: each order's request span holds the write.
	service := tracetest.NewInMemoryExporter()
	serviceTP := sdktrace.NewTracerProvider(sdktrace.WithSyncer(service))
	defer serviceTP.Shutdown(context.Background()) //nolint:errcheck
	opts, err := outbox.LoadOptions(exampleConfig(t, map[string]any{"table.include.list": schema + ".outbox"}))
	if err != nil {
		t.Fatal(err)
	}
	w, err := outbox.New(context.Background(), admin, opts)
	if err != nil {
		t.Fatal(err)
	}
	const events = 3
	ids := map[string]bool{}
	for i := range events {
		ctx, span := serviceTP.Tracer("orders").Start(context.Background(), "POST /orders")
		id := fmt.Sprintf("0190b1a8-4c1e-7000-8000-%012d", i)
		ids[id] = true
		err := pgx.BeginFunc(ctx, admin, func(tx pgx.Tx) error {
			return w.Write(ctx, tx, outbox.Event{ID: id, AggregateType: topic, AggregateID: "order-" + strconv.Itoa(i),
				Payload: map[string]int{"n": i}, Columns: map[string]any{"event_type": "OrderPlaced"}})
		})
		span.End()
		if err != nil {
			t.Fatal(err)
		}
	}

	// The consumer.
	consumed := tracetest.NewInMemoryExporter()
	consumerTP := sdktrace.NewTracerProvider(sdktrace.WithSyncer(consumed))
	defer consumerTP.Shutdown(context.Background()) //nolint:errcheck
	pool, err := pgxpool.New(context.Background(), testbed.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	where := map[string]consumer.Message{}
	c, err := consumer.New(consumer.Config{Name: topic, Brokers: []string{testbed.KafkaBrokers(t)}, Topics: []string{topic},
		ProcessedTable: schema + ".processed_events", TracerProvider: consumerTP},
		pool, func(_ context.Context, _ pgx.Tx, m consumer.Message) error { where[m.EventID] = m; return nil })
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	deadline := time.Now().Add(60 * time.Second)
	for c.Stats().Applied < events && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	if err := <-done; err != nil || c.Stats().Applied != events {
		t.Fatalf("consumer: %v, applied %d; want %d", err, c.Stats().Applied, events)
	}

	relaySpans := recv.Wait(t, 30*time.Second, "two relay spans per event", func(s []otlprecv.Span) bool { return len(s) >= 2*events })
	byID := map[string]otlprecv.Span{}
	for _, s := range relaySpans {
		if s.Service != "outboxrelay-trace-test" {
			t.Errorf("span %s of service %q, want OTEL_SERVICE_NAME's", s.Name, s.Service)
		}
		byID[s.SpanID()] = s
	}
	checked := 0
	for _, cs := range consumed.GetSpans() {
		id := cs.Name
		var eventID string
		for _, a := range cs.Attributes {
			if a.Key == "messaging.message.id" {
				eventID = a.Value.AsString()
			}
		}
		pub, ok := byID[cs.Parent.SpanID().String()]
		if !ok {
			t.Errorf("consumer span %s (event %s): its parent %s is no relay span", id, eventID, cs.Parent.SpanID())
			continue
		}
		logSpan, ok := byID[pub.ParentID()]
		if !ok || logSpan.Name != "db-log-write" || pub.Name != "debezium-read" {
			t.Errorf("event %s: publish span %q's parent %q (%v); want debezium-read under db-log-write", eventID, pub.Name, logSpan.Name, ok)
			continue
		}
		var svc *tracetest.SpanStub
		for _, s := range service.GetSpans() {
			if s.SpanContext.SpanID().String() == logSpan.ParentID() {
				svc = &s
			}
		}
		if svc == nil || svc.SpanContext.TraceID().String() != pub.TraceID() || cs.SpanContext.TraceID().String() != pub.TraceID() {
			t.Errorf("event %s: db-log-write's parent %s is no service span of the same trace", eventID, logSpan.ParentID())
			continue
		}
		m := where[eventID]
		for k, want := range map[string]string{
			"messaging.system": "kafka", "messaging.destination.name": topic, "messaging.message.id": eventID,
			"messaging.destination.partition.id": strconv.Itoa(m.Partition), "messaging.kafka.offset": strconv.FormatInt(m.Offset, 10),
			"messaging.kafka.message.key": string(m.Key),
		} {
			if got := pub.Attr(k); got != want {
				t.Errorf("event %s: publish span %s = %q, want %q (as consumed)", eventID, k, got, want)
			}
		}
		if logSpan.Attr("db.system.name") != "postgresql" || logSpan.Attr("outboxrelay.table") != schema+".outbox" || logSpan.Attr("outboxrelay.lsn") == "" {
			t.Errorf("event %s: db-log-write attributes %v", eventID, logSpan.Attributes)
		}
		if logSpan.StartTimeUnixNano > logSpan.EndTimeUnixNano || logSpan.EndTimeUnixNano != pub.StartTimeUnixNano ||
			pub.EndTimeUnixNano < pub.StartTimeUnixNano || uint64(svc.StartTime.UnixNano()) > logSpan.StartTimeUnixNano {
			t.Errorf("event %s: service from %v, db-log-write %d–%d, publish %d–%d: want them in that order",
				eventID, svc.StartTime, logSpan.StartTimeUnixNano, logSpan.EndTimeUnixNano, pub.StartTimeUnixNano, pub.EndTimeUnixNano)
		}
		delete(ids, eventID)
		checked++
	}
	if checked != events || len(ids) != 0 {
		t.Errorf("%d events formed one trace each, want %d (missing %v)", checked, events, ids)
	}
}
