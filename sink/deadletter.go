package sink

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"

	kafka "github.com/segmentio/kafka-go"

	"github.com/outboxrelay/outboxrelay/router"
)

// DLQMeta says where a dead-lettered record came from.
type DLQMeta struct {
	// LSN of the row's commit (or of the row), as PostgreSQL prints it
	// (0/16B3748): the sink knows no PostgreSQL type.
	LSN string
	// SourceTable is "schema.table" of the outbox row.
	SourceTable string
	// ConnectorName is the connector's "name"; omitted when empty.
	ConnectorName string
	// Stage is Connect's stage name: TRANSFORMATION for a routing failure,
	// KAFKA_PRODUCE for a record Kafka refused. Omitted when empty.
	Stage string
	// ErrorClass fills __connect.errors.exception.class.name; default: the
	// Go name of the cause (see errorClass).
	ErrorClass string
}

// DeadLetterRecord builds the dead-letter copy of r: the original key,
// value and headers, sent to topic, plus the error headers. The original
// topic goes in __connect.errors.topic. The record is keyed like the
// original, so one key's dead letters keep their order.
func DeadLetterRecord(topic string, r router.Record, cause error, meta DLQMeta) router.Record {
	class := meta.ErrorClass
	if class == "" {
		class = errorClass(cause)
	}
	msg := "<nil>"
	if cause != nil {
		msg = cause.Error()
	}
	h := make([]router.Header, 0, len(r.Headers)+9)
	h = append(h, r.Headers...)
	add := func(k, v string) { h = append(h, router.Header{Key: k, Value: []byte(v)}) }
	add(router.HeaderDLQTopic, r.Topic)
	if meta.ConnectorName != "" {
		add(router.HeaderDLQConnectorName, meta.ConnectorName)
		add(router.HeaderDLQTaskID, "0")
	}
	if meta.Stage != "" {
		add(router.HeaderDLQStage, meta.Stage)
	}
	add(router.HeaderDLQExceptionClass, class)
	add(router.HeaderDLQExceptionMsg, msg)
	add(router.HeaderDLQLSN, meta.LSN)
	add(router.HeaderDLQSourceTable, meta.SourceTable)
	if r.EventID != "" {
		add(router.HeaderDLQEventID, r.EventID)
	}
	return router.Record{Topic: topic, Partition: -1, Key: r.Key, Value: r.Value, Headers: h, Timestamp: r.Timestamp, EventID: r.EventID}
}

// causeNames are the sink's sentinels a dead letter can be caused by,
// with the name errorClass gives them: their Go type (*errors.errorString)
// would say nothing.
var causeNames = []struct {
	err  error
	name string
}{
	{ErrRecordTooLarge, "sink.ErrRecordTooLarge"},
	{ErrTopicMissing, "sink.ErrTopicMissing"},
	{ErrNoSuchPartition, "sink.ErrNoSuchPartition"},
	{ErrClosed, "sink.ErrClosed"},
}

// errorClass fills __connect.errors.exception.class.name, where Kafka
// Connect writes the Java class of the exception (for a too-large record
// org.apache.kafka.common.errors.RecordTooLargeException). There is no Java
// class here, so it names the cause one would match in Go, searching the
// whole tree of wrapped errors (both sides of fmt.Errorf("%w: %w") and
// errors.Join, which errors.Unwrap does not follow), in this order:
//
//   - one of the sink's sentinels: "sink.ErrRecordTooLarge",
//     "sink.ErrTopicMissing", "sink.ErrNoSuchPartition", "sink.ErrClosed";
//   - a broker error code: "kafka.Error(10)" (10 is MESSAGE_TOO_LARGE);
//   - else the Go type of the deepest error whose type is not the standard
//     library's wrapping or plain text (fmt's, errors'): "*router.RowError"
//     for a row the router cannot route (a NULL route value, a bad topic);
//   - else the Go type of the innermost error, e.g. "*errors.errorString".
func errorClass(err error) string {
	if err == nil {
		return "<nil>"
	}
	for _, c := range causeNames {
		if errors.Is(err, c.err) {
			return c.name
		}
	}
	var ke kafka.Error
	if errors.As(err, &ke) {
		return "kafka.Error(" + strconv.Itoa(int(ke)) + ")"
	}
	if typed, _ := deepestTyped(err, 0); typed != nil {
		return reflect.TypeOf(typed).String()
	}
	for {
		next := unwrapAll(err)
		if len(next) == 0 {
			return reflect.TypeOf(err).String()
		}
		err = next[0]
	}
}

// deepestTyped returns the deepest error in err's tree whose type is not
// from package fmt or errors, and its depth; the first one found wins a tie.
//
//lint:ignore ST1008 the error is the result, not a failure of the call
func deepestTyped(err error, depth int) (error, int) {
	var best error
	bestDepth := -1
	if !plainError(err) {
		best, bestDepth = err, depth
	}
	for _, next := range unwrapAll(err) {
		if e, d := deepestTyped(next, depth+1); e != nil && d > bestDepth {
			best, bestDepth = e, d
		}
	}
	return best, bestDepth
}

// plainError reports whether err's type is the standard library's
// wrapping or plain text (package fmt or errors), which names no cause.
func plainError(err error) bool {
	t := reflect.TypeOf(err)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.PkgPath() == "fmt" || t.PkgPath() == "errors"
}

// unwrapAll returns the errors err wraps: one (Unwrap() error), several
// (Unwrap() []error: fmt.Errorf with two %w, errors.Join) or none.
func unwrapAll(err error) []error {
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		if next := u.Unwrap(); next != nil {
			return []error{next}
		}
	case interface{ Unwrap() []error }:
		var out []error
		for _, next := range u.Unwrap() {
			if next != nil {
				out = append(out, next)
			}
		}
		return out
	}
	return nil
}

// DeadLetter sends r to errors.deadletterqueue.topic.name with error
// headers (see DeadLetterRecord); the topic is created with one partition
// when missing. It acknowledges like Send. A record too large for Kafka is
// dead-lettered without its value (the headers say why), since the copy
// would be refused too.
func (p *Producer) DeadLetter(ctx context.Context, r router.Record, cause error, meta DLQMeta, onAck func(error)) error {
	if p.cfg.DeadLetterTopic == "" {
		return ErrNoDeadLetterTopic
	}
	d := DeadLetterRecord(p.cfg.DeadLetterTopic, r, cause, meta)
	if _, err := SizeOf(d, p.cfg.MaxRequestSize); err != nil {
		d.Value = nil
	}
	if err := p.Send(ctx, d, onAck); err != nil {
		return fmt.Errorf("sink: dead-lettering event id %q: %w", r.EventID, err)
	}
	return nil
}
