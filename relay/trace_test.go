package relay

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/outboxrelay/outboxrelay/capture"
	"github.com/outboxrelay/outboxrelay/router"
)

// placingSink acks every record at once on its own goroutine, telling its
// Placed first (partition 1, offsets from 40), and keeps the headers sent.
// A record whose event id is in reject is refused (ErrRecordRejected).
type placingSink struct {
	mu      sync.Mutex
	next    int64
	headers map[string][]router.Header
	placed  map[string]bool // Placed was set
	reject  string
	wg      sync.WaitGroup
}

func (s *placingSink) Send(_ context.Context, r *router.Record, ack func(error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.EventID == s.reject {
		return fmt.Errorf("refused: %w", ErrRecordRejected)
	}
	if s.headers == nil {
		s.headers, s.placed, s.next = map[string][]router.Header{}, map[string]bool{}, 40
	}
	h := make([]router.Header, len(r.Headers))
	for i, x := range r.Headers {
		h[i] = router.Header{Key: x.Key, Value: append([]byte(nil), x.Value...)}
	}
	s.headers[r.EventID] = h
	s.placed[r.EventID] = r.Placed != nil
	placed, off := r.Placed, s.next
	s.next++
	s.wg.Go(func() {
		if placed != nil {
			placed(1, off)
		}
		ack(nil)
	})
	return nil
}

func (s *placingSink) Flush(context.Context) error { s.wg.Wait(); return nil }

func (s *placingSink) header(id, key string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, h := range s.headers[id] {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

const (
	parentTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	parentSpan  = "00f067aa0ba902b7"
)

// tracedRow is an outbox row with a span context in Debezium's form.
func tracedRow(id string) *capture.Row {
	row := outboxRow(id, "order")
	row.Columns = append(row.Columns, capture.Column{Name: "tracingspancontext", OID: 25,
		Text: []byte("#Thu Dec 03 13:00:00 UTC 2026\ntraceparent=00-" + parentTrace + "-" + parentSpan + "-01\ntracestate=rojo\\=00f067aa0ba902b7\n")})
	return row
}

func runTraced(t *testing.T, sink *placingSink, tr Tracing, poison Poison, rows ...*capture.Row) *tracetest.InMemoryExporter {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	if tr.Tracer == nil {
		tr.Tracer = tp.Tracer("test")
	}
	evs := tx(100, 140, rows...)
	evs[0].CommitTime = time.Now().Add(-time.Second)
	st := newFakeStream(50, evs...)
	opt := testOptions(t, &fakeSource{streams: []*fakeStream{st}}, sink)
	opt.Tracing, opt.Poison = tr, poison
	stop := runAsync(t, opt)
	waitUntil(t, "the transaction confirmed", func() bool { return st.confirmed() == 140 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	return exp
}

func attrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

// An event with a span context gets db-log-write (commit time to read)
// and the publish span (read to ack) as the row's context's descendants,
// the publish span carries the messaging attributes and where Kafka wrote
// the record, and the record's headers carry the publish span's context.
func TestTracedEventSpans(t *testing.T) {
	sink := &placingSink{}
	exp := runTraced(t, sink, Tracing{Operation: "outbox-publish"}, nil, tracedRow("e1"), outboxRow("e2", "order"))
	spans := exp.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2 (db-log-write, outbox-publish) for the one event with a context", len(spans))
	}
	log, pub := spans[0], spans[1]
	if log.Name != "db-log-write" || pub.Name != "outbox-publish" {
		t.Fatalf("spans %q, %q; want db-log-write, outbox-publish", log.Name, pub.Name)
	}
	if log.Parent.TraceID().String() != parentTrace || log.Parent.SpanID().String() != parentSpan || !log.Parent.IsRemote() {
		t.Errorf("db-log-write's parent %v; want the row's remote context %s/%s", log.Parent, parentTrace, parentSpan)
	}
	if pub.Parent.SpanID() != log.SpanContext.SpanID() || pub.SpanContext.TraceID().String() != parentTrace {
		t.Errorf("publish span's parent %v; want db-log-write %v in the row's trace", pub.Parent.SpanID(), log.SpanContext.SpanID())
	}
	if pub.SpanKind != trace.SpanKindProducer || log.SpanKind != trace.SpanKindInternal {
		t.Errorf("kinds %v, %v; want internal, producer", log.SpanKind, pub.SpanKind)
	}
	if !log.EndTime.Equal(pub.StartTime) || !log.StartTime.Before(log.EndTime) || time.Since(log.StartTime) < time.Second {
		t.Errorf("db-log-write %v–%v, publish from %v; want the commit time (a second ago) to the read, the publish from the read", log.StartTime, log.EndTime, pub.StartTime)
	}
	want := map[attribute.Key]string{
		"messaging.system": "kafka", "messaging.operation.type": "send", "messaging.destination.name": "outbox.event.order",
		"messaging.message.id": "e1", "messaging.kafka.message.key": "a1", "messaging.destination.partition.id": "1",
		"outboxrelay.lsn": capture.LSN(100).String(),
	}
	got := attrs(pub)
	for k, v := range want {
		if got[k].String() != v {
			t.Errorf("publish span %s = %q, want %q", k, got[k].String(), v)
		}
	}
	if got["messaging.kafka.offset"].AsInt64() != 40 {
		t.Errorf("messaging.kafka.offset = %v, want 40 (what the delivery placed)", got["messaging.kafka.offset"])
	}
	if la := attrs(log); la["db.system.name"].AsString() != "postgresql" || la["outboxrelay.table"].AsString() != "public.outbox" {
		t.Errorf("db-log-write attributes %v; want db.system.name=postgresql, outboxrelay.table=public.outbox", log.Attributes)
	}
	wantParent := "00-" + parentTrace + "-" + pub.SpanContext.SpanID().String() + "-01"
	if h := sink.header("e1", "traceparent"); h != wantParent {
		t.Errorf("traceparent header %q, want the publish span's %q", h, wantParent)
	}
	if h := sink.header("e1", "tracestate"); h != "rojo=00f067aa0ba902b7" {
		t.Errorf("tracestate header %q, want the row's, unescaped", h)
	}
	if h := sink.header("e2", "traceparent"); h != "" || sink.placed["e2"] {
		t.Errorf("an event without context: traceparent %q, Placed set %v; want neither (tracing.with.context.field.only)", h, sink.placed["e2"])
	}
}

// tracing.with.context.field.only=false: an event without a context
// starts a trace of its own, and its record carries it.
func TestTracedWithoutContext(t *testing.T) {
	sink := &placingSink{}
	exp := runTraced(t, sink, Tracing{WithoutContext: true}, nil, outboxRow("e1", "order"))
	spans := exp.GetSpans()
	if len(spans) != 2 || spans[0].Parent.IsValid() || spans[1].Name != "debezium-read" {
		t.Fatalf("spans %v; want a root db-log-write and its debezium-read", spans)
	}
	want := "00-" + spans[1].SpanContext.TraceID().String() + "-" + spans[1].SpanContext.SpanID().String() + "-01"
	if h := sink.header("e1", "traceparent"); h != want {
		t.Errorf("traceparent header %q, want %q", h, want)
	}
}

// A record the delivery refuses and the poison policy dead-letters ends
// its publish span with the error.
func TestTracedDeadLetteredRecordError(t *testing.T) {
	sink := &placingSink{reject: "e1"}
	var handed []string
	poison := func(_ context.Context, _ *router.Event, rec *router.Record, _ error, ack func(error)) error {
		handed = append(handed, rec.EventID)
		ack(nil)
		return nil
	}
	exp := runTraced(t, sink, Tracing{}, poison, tracedRow("e1"))
	spans := exp.GetSpans()
	if len(handed) != 1 || len(spans) != 2 {
		t.Fatalf("dead-lettered %v, %d spans; want e1 and 2 spans", handed, len(spans))
	}
	pub := spans[1]
	if pub.Status.Code != codes.Error || !strings.Contains(pub.Status.Description, "refused") {
		t.Errorf("publish span status %v, want an error", pub.Status)
	}
	if len(pub.Events) != 1 || pub.Events[0].Name != "exception" || !attrs(pub)[AttrDeadLettered].AsBool() {
		t.Errorf("publish span events %v, attributes %v; want the recorded error and %s=true", pub.Events, pub.Attributes, AttrDeadLettered)
	}
}

// Tracing off: the record goes as the router made it, with no Placed.
func TestUntracedRecordUnchanged(t *testing.T) {
	sink := &placingSink{}
	evs := tx(100, 140, tracedRow("e1"))
	st := newFakeStream(50, evs...)
	stop := runAsync(t, testOptions(t, &fakeSource{streams: []*fakeStream{st}}, sink))
	waitUntil(t, "the transaction confirmed", func() bool { return st.confirmed() == 140 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if h := sink.header("e1", "traceparent"); h != "00-"+parentTrace+"-"+parentSpan+"-01" || sink.placed["e1"] {
		t.Errorf("traceparent %q, Placed set %v; want the row's context forwarded, no Placed", h, sink.placed["e1"])
	}
}

// traceObserver records the trace ids of PublishedTraced and counts
// Published.
type traceObserver struct {
	nopObserver
	mu        sync.Mutex
	traced    []string
	published int
}

func (o *traceObserver) Published(string, int, time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.published++
}

func (o *traceObserver) PublishedTraced(_ string, _ int, _ time.Time, traceID string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.traced = append(o.traced, traceID)
}

// A traced, sampled record's publication reaches a TraceObserver with
// its trace id (the commit-to-ack exemplar); an untraced one as before.
func TestTracedPublicationCarriesTraceID(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background()) //nolint:errcheck
	obs := &traceObserver{}
	st := newFakeStream(50, tx(100, 140, tracedRow("e1"), outboxRow("e2", "order"))...)
	opt := testOptions(t, &fakeSource{streams: []*fakeStream{st}}, &placingSink{})
	opt.Tracing, opt.Observer = Tracing{Tracer: tp.Tracer("test")}, obs
	stop := runAsync(t, opt)
	waitUntil(t, "the transaction confirmed", func() bool { return st.confirmed() == 140 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if len(obs.traced) != 1 || obs.traced[0] != parentTrace || obs.published != 1 {
		t.Errorf("traced %v, published %d; want [%s] and 1", obs.traced, obs.published, parentTrace)
	}
}
