package consumer

import (
	"context"
	"strconv"
	"unicode/utf8"

	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Attribute keys of the consumer's span that no semantic convention names.
const (
	// AttrDuplicate is true on the span of a message whose event was
	// already in processed_events: the handler did not run.
	AttrDuplicate = attribute.Key("outboxrelay.consumer.duplicate")
	// AttrDeadLettered names the dead-letter topic a message went to.
	AttrDeadLettered = attribute.Key("outboxrelay.consumer.dead_letter_topic")
)

// startSpan starts m's span (Config.TracerProvider) in ctx, as a child of
// the context in m's headers, or linked to it (Config.TraceLinked). With
// no tracer it returns ctx and nil.
func (c *Consumer) startSpan(ctx context.Context, m Message) (context.Context, trace.Span) {
	if c.tracer == nil {
		return ctx, nil
	}
	remote := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), headerCarrier(m.Headers)))
	attrs := []attribute.KeyValue{
		attribute.String("messaging.system", "kafka"),
		attribute.String("messaging.operation.type", "process"),
		attribute.String("messaging.operation.name", "process"),
		attribute.String("messaging.destination.name", m.Topic),
		attribute.String("messaging.destination.partition.id", strconv.Itoa(m.Partition)),
		attribute.Int64("messaging.kafka.offset", m.Offset),
		attribute.String("messaging.consumer.group.name", c.cfg.Name),
		attribute.String("messaging.message.id", m.EventID),
	}
	if m.Key != nil && utf8.Valid(m.Key) {
		attrs = append(attrs, attribute.String("messaging.kafka.message.key", string(m.Key)))
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...)}
	switch {
	case remote.IsValid() && c.cfg.TraceLinked:
		opts = append(opts, trace.WithNewRoot(), trace.WithLinks(trace.Link{SpanContext: remote}))
	case remote.IsValid():
		ctx = trace.ContextWithRemoteSpanContext(ctx, remote)
	}
	return c.tracer.Start(ctx, "process "+m.Topic, opts...)
}

// endSpan ends span (nil: none) with err, the message's outcome.
func endSpan(span trace.Span, err error) {
	if span == nil {
		return
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// spanApplied marks ctx's span with whether the handler ran.
func spanApplied(ctx context.Context, applied bool) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(AttrDuplicate.Bool(!applied))
	if !applied {
		span.AddEvent("duplicate skipped: the event is in processed_events; the handler did not run")
	}
}

// spanRetry records a failed attempt that is tried again.
func spanRetry(ctx context.Context, attempt int, err error) {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.AddEvent("attempt failed, retrying", trace.WithAttributes(attribute.Int("attempt", attempt), attribute.String("error", err.Error())))
	}
}

// spanDeadLettered records that the message went to the dead-letter topic.
func spanDeadLettered(ctx context.Context, topic string, cause error) {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(AttrDeadLettered.String(topic))
		span.RecordError(cause)
		span.SetStatus(codes.Error, "dead-lettered: "+cause.Error())
	}
}

// headerCarrier reads a message's headers for the W3C propagator.
type headerCarrier []kafka.Header

func (h headerCarrier) Get(key string) string {
	for _, x := range h {
		if x.Key == key {
			return string(x.Value)
		}
	}
	return ""
}

func (h headerCarrier) Set(string, string) {} // never written

func (h headerCarrier) Keys() []string {
	keys := make([]string, len(h))
	for i, x := range h {
		keys[i] = x.Key
	}
	return keys
}
