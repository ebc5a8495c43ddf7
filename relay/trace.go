package relay

import (
	"context"
	"strconv"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/outboxrelay/outboxrelay/router"
)

// Tracing is how the relay records an event's spans (Options.Tracing).
// With a Tracer, each event whose row holds a span context
// (tracing.span.context.field) gets two spans, children of that context,
// as Debezium's EventRouter makes them:
//
//   - "db-log-write": its time in the outbox, from the transaction's
//     commit time to when the relay read the row;
//   - Operation (tracing.operation.name, "debezium-read"), a producer
//     span: the publish, from the read to Kafka's acknowledgement (with
//     exactly-once: its write inside the open Kafka transaction), with the
//     messaging attributes of the OpenTelemetry semantic conventions and
//     the partition and offset Kafka wrote it at.
//
// The record's traceparent and tracestate headers then carry the publish
// span's context, so the consumer's span is its child. A record Kafka
// refuses (dead-lettered, or stopping the relay) ends its span with the
// error. The spans end on the goroutine that learns the acknowledgement;
// the SDK's batch processor bounds what waits to be exported.
type Tracing struct {
	Tracer trace.Tracer // nil: no spans, and no cost per event
	// Operation names the publish span; "" is Debezium's "debezium-read".
	Operation string
	// WithoutContext traces events whose row holds no span context too,
	// each as the root of a trace of its own
	// (tracing.with.context.field.only=false).
	WithoutContext bool
}

// Attribute keys of the relay's spans that no semantic convention names.
const (
	AttrLSN          = attribute.Key("outboxrelay.lsn")           // the transaction's commit LSN
	AttrTable        = attribute.Key("outboxrelay.table")         // the outbox table, schema.table
	AttrDeadLettered = attribute.Key("outboxrelay.dead_lettered") // the record went to the dead-letter topic
)

// The semantic conventions' keys and values the spans use (semconv
// v1.3x: messaging and database spans).
const (
	attrMessagingSystem     = attribute.Key("messaging.system")
	attrMessagingOpType     = attribute.Key("messaging.operation.type")
	attrMessagingOpName     = attribute.Key("messaging.operation.name")
	attrDestinationName     = attribute.Key("messaging.destination.name")
	attrPartitionID         = attribute.Key("messaging.destination.partition.id")
	attrMessageID           = attribute.Key("messaging.message.id")
	attrKafkaMessageKey     = attribute.Key("messaging.kafka.message.key")
	attrKafkaOffset         = attribute.Key("messaging.kafka.offset")
	attrDBSystemName        = attribute.Key("db.system.name")
	attrDBOperationName     = attribute.Key("db.operation.name")
	outboxLogSpanName       = "db-log-write"
	defaultTracingOperation = "debezium-read"
)

// eventSpan is one traced record's publish span, from Send to its ack.
type eventSpan struct {
	span      trace.Span
	partition int
	offset    int64
}

// traced starts rec's spans when tracing records its event, and puts the
// publish span's context into rec's headers; nil otherwise.
func (s *session) traced(ev *router.Event, rec *router.Record) *eventSpan {
	t := &s.opt.Tracing
	carrier := headerCarrier{&rec.Headers}
	parent := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), carrier))
	if !parent.IsValid() && !t.WithoutContext {
		return nil
	}
	ctx := context.Background()
	if parent.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, parent)
	}
	read := ev.ProcessedAt
	commit := ev.CommitTime
	if commit.IsZero() || commit.After(read) { // a snapshot read has none
		commit = read
	}
	lsn := AttrLSN.String(ev.CommitLSN.String())
	ctx, logSpan := t.Tracer.Start(ctx, outboxLogSpanName, trace.WithTimestamp(commit),
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attrDBSystemName.String("postgresql"), attrDBOperationName.String("INSERT"),
			AttrTable.String(ev.Table()), lsn, attrMessageID.String(rec.EventID)))
	logSpan.End(trace.WithTimestamp(read))

	name := t.Operation
	if name == "" {
		name = defaultTracingOperation
	}
	attrs := []attribute.KeyValue{
		attrMessagingSystem.String("kafka"), attrMessagingOpType.String("send"), attrMessagingOpName.String("send"),
		attrDestinationName.String(rec.Topic), attrMessageID.String(rec.EventID), lsn,
	}
	if rec.Key != nil && utf8.Valid(rec.Key) {
		attrs = append(attrs, attrKafkaMessageKey.String(string(rec.Key)))
	}
	ctx, pub := t.Tracer.Start(ctx, name, trace.WithTimestamp(read), trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(attrs...))
	propagation.TraceContext{}.Inject(ctx, carrier)
	sp := &eventSpan{span: pub, partition: rec.Partition, offset: -1}
	rec.Placed = sp.placed
	return sp
}

// placed is the record's router.Record.Placed.
func (e *eventSpan) placed(partition int, offset int64) { e.partition, e.offset = partition, offset }

// tracedAckerFor is ackerFor for a traced record: the span ends when the
// ack comes, and a sampled record's publication goes to a TraceObserver
// with its trace id (an exemplar).
func (s *session) tracedAckerFor(topic string, size int64, published int, e *eventSpan) func(error) {
	tx := s.tx
	to, _ := s.opt.Observer.(TraceObserver)
	traceID := ""
	if sc := e.span.SpanContext(); sc.IsSampled() && to != nil {
		traceID = sc.TraceID().String()
	}
	return func(err error) {
		e.end(err)
		s.budget.Release(1, size)
		tx.Ack(err)
		switch {
		case err != nil || topic == "":
		case traceID != "":
			to.PublishedTraced(topic, published, tx.commitTime, traceID)
		default:
			s.opt.Observer.Published(topic, published, tx.commitTime)
		}
	}
}

// end ends the publish span, with err, the record's failure, when not nil.
// A nil e (an event not traced) does nothing.
func (e *eventSpan) end(err error) {
	if e == nil {
		return
	}
	if e.partition >= 0 {
		e.span.SetAttributes(attrPartitionID.String(strconv.Itoa(e.partition)))
	}
	if e.offset >= 0 {
		e.span.SetAttributes(attrKafkaOffset.Int64(e.offset))
	}
	if err != nil {
		e.span.RecordError(err)
		e.span.SetStatus(codes.Error, err.Error())
	}
	e.span.End(trace.WithTimestamp(time.Now()))
}

// deadLettered ends the span of a record the delivery refused and the
// poison policy takes.
func (e *eventSpan) deadLettered(err error) {
	if e == nil {
		return
	}
	e.span.SetAttributes(AttrDeadLettered.Bool(true))
	e.end(err)
}

// headerCarrier reads and writes a record's headers for the W3C
// propagator. Set replaces a header of the key, or appends one; the new
// value is the carrier's own memory (the delivery copies it at Send).
type headerCarrier struct{ h *[]router.Header }

func (c headerCarrier) Get(key string) string {
	for _, h := range *c.h {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

func (c headerCarrier) Set(key, value string) {
	for i := range *c.h {
		if (*c.h)[i].Key == key {
			(*c.h)[i].Value = []byte(value)
			return
		}
	}
	// A new array: the router's records may share one.
	n := len(*c.h)
	*c.h = append((*c.h)[:n:n], router.Header{Key: key, Value: []byte(value)})
}

func (c headerCarrier) Keys() []string {
	keys := make([]string, len(*c.h))
	for i, h := range *c.h {
		keys[i] = h.Key
	}
	return keys
}
