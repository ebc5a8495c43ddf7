package consumer_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/outboxrelay/outboxrelay/consumer"
)

const (
	relayTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	relaySpan  = "00f067aa0ba902b7"
)

func tracedEvent(id, key string, seq int) kafka.Message {
	m := event(id, key, seq)
	m.Headers = append(m.Headers, kafka.Header{Key: "traceparent", Value: []byte("00-" + relayTrace + "-" + relaySpan + "-01")})
	return m
}

func spanAttrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

// runTraced consumes msgs with a tracer that records every span and
// returns the spans once n messages were handled.
func runTraced(t *testing.T, b *bed, linked bool, h consumer.Handler, n int, msgs ...kafka.Message) []tracetest.SpanStub {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	produce(t, b.brokers, b.topic, msgs...)
	c, err := consumer.New(consumer.Config{Name: b.topic, Brokers: []string{b.brokers}, Topics: []string{b.topic},
		ProcessedTable: b.schema + ".processed_events", TracerProvider: tp, TraceLinked: linked,
		MaxAttempts: 2, Backoff: time.Millisecond, MaxBackoff: time.Millisecond, DeadLetterTopic: b.topic + "-dlq"}, b.pool, h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteTopic(t, b.brokers, b.topic+"-dlq") })
	stop, _ := runConsumer(t, c)
	waitFor(t, 60*time.Second, "the messages' spans", func() bool { return len(exp.GetSpans()) >= n })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	return exp.GetSpans()
}

// Each handled message runs in a consumer span that is the child of the
// context in its headers; the handler's ctx holds it; a duplicate says it
// was skipped; a dead-lettered one records the error.
func TestSpans(t *testing.T) {
	b := newBed(t, 1)
	var handlerSpans []trace.SpanContext
	h := func(ctx context.Context, tx pgx.Tx, m consumer.Message) error {
		handlerSpans = append(handlerSpans, trace.SpanContextFromContext(ctx))
		if m.EventID == "bad" {
			return errors.New("no such customer")
		}
		return recordApplied(b.schema)(ctx, tx, m)
	}
	spans := runTraced(t, b, false, h, 4, tracedEvent("e1", "k", 1), tracedEvent("e1", "k", 1), event("e2", "k", 2), tracedEvent("bad", "k", 3))
	if len(spans) != 4 {
		t.Fatalf("%d spans, want 4", len(spans))
	}
	first, dup, plain, bad := spans[0], spans[1], spans[2], spans[3]
	for i, s := range []tracetest.SpanStub{first, dup, bad} {
		if s.Parent.TraceID().String() != relayTrace || s.Parent.SpanID().String() != relaySpan || s.SpanContext.TraceID().String() != relayTrace {
			t.Errorf("span %d: parent %v; want the headers' context", i, s.Parent)
		}
	}
	if plain.Parent.IsValid() {
		t.Errorf("a message without a context: parent %v, want a root span", plain.Parent)
	}
	if first.Name != "process "+b.topic || first.SpanKind != trace.SpanKindConsumer {
		t.Errorf("span %q of kind %v; want %q, consumer", first.Name, first.SpanKind, "process "+b.topic)
	}
	a := spanAttrs(first)
	if a["messaging.message.id"].AsString() != "e1" || a["messaging.consumer.group.name"].AsString() != b.topic ||
		a["messaging.kafka.offset"].AsInt64() != 0 || a["messaging.destination.partition.id"].AsString() != "0" || a[consumer.AttrDuplicate].AsBool() {
		t.Errorf("first span's attributes %v", first.Attributes)
	}
	if !spanAttrs(dup)[consumer.AttrDuplicate].AsBool() || len(dup.Events) != 1 {
		t.Errorf("the duplicate's span: attributes %v, events %v; want %s=true and the skip event", dup.Attributes, dup.Events, consumer.AttrDuplicate)
	}
	if len(handlerSpans) == 0 || handlerSpans[0].SpanID() != first.SpanContext.SpanID() {
		t.Errorf("the handler's ctx holds %v, want the message's span %v", handlerSpans, first.SpanContext.SpanID())
	}
	if bad.Status.Code != codes.Error || spanAttrs(bad)[consumer.AttrDeadLettered].AsString() != b.topic+"-dlq" {
		t.Errorf("the dead-lettered span: status %v, attributes %v", bad.Status, bad.Attributes)
	}
}

// TraceLinked: the span starts a trace of its own, linked to the headers'.
func TestSpansLinked(t *testing.T) {
	b := newBed(t, 1)
	spans := runTraced(t, b, true, recordApplied(b.schema), 1, tracedEvent("e1", "k", 1))
	s := spans[0]
	if s.Parent.IsValid() || s.SpanContext.TraceID().String() == relayTrace {
		t.Errorf("parent %v, trace %v; want a new root", s.Parent, s.SpanContext.TraceID())
	}
	if len(s.Links) != 1 || s.Links[0].SpanContext.SpanID().String() != relaySpan {
		t.Errorf("links %v; want one to the headers' context", s.Links)
	}
}
