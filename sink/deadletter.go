package sink

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
)

// Dead-letter headers. The __connect.errors.* names are Kafka Connect's
// (DeadLetterQueueReporter, with errors.deadletterqueue.context.headers.enable),
// so tooling written for Connect's dead-letter topics reads ours.
const (
	HeaderDLQTopic          = "__connect.errors.topic"
	HeaderDLQConnectorName  = "__connect.errors.connector.name"
	HeaderDLQTaskID         = "__connect.errors.task.id"
	HeaderDLQStage          = "__connect.errors.stage"
	HeaderDLQExceptionClass = "__connect.errors.exception.class.name"
	HeaderDLQExceptionMsg   = "__connect.errors.exception.message"
	HeaderDLQLSN            = "__outboxrelay.lsn"
	HeaderDLQSourceTable    = "__outboxrelay.source.table"
	HeaderDLQEventID        = "__outboxrelay.event.id"
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
	// Go type of the innermost error cause.
	ErrorClass string
}

// DeadLetterRecord builds the dead-letter copy of r: the original key,
// value and headers, sent to topic, plus the error headers. The original
// topic goes in __connect.errors.topic. The record is keyed like the
// original, so one key's dead letters keep their order.
func DeadLetterRecord(topic string, r Record, cause error, meta DLQMeta) Record {
	class := meta.ErrorClass
	if class == "" {
		class = errorClass(cause)
	}
	msg := "<nil>"
	if cause != nil {
		msg = cause.Error()
	}
	h := make([]Header, 0, len(r.Headers)+9)
	h = append(h, r.Headers...)
	add := func(k, v string) { h = append(h, Header{Key: k, Value: []byte(v)}) }
	add(HeaderDLQTopic, r.Topic)
	if meta.ConnectorName != "" {
		add(HeaderDLQConnectorName, meta.ConnectorName)
		add(HeaderDLQTaskID, "0")
	}
	if meta.Stage != "" {
		add(HeaderDLQStage, meta.Stage)
	}
	add(HeaderDLQExceptionClass, class)
	add(HeaderDLQExceptionMsg, msg)
	add(HeaderDLQLSN, meta.LSN)
	add(HeaderDLQSourceTable, meta.SourceTable)
	if r.EventID != "" {
		add(HeaderDLQEventID, r.EventID)
	}
	return Record{Topic: topic, Partition: -1, Key: r.Key, Value: r.Value, Headers: h, Timestamp: r.Timestamp, EventID: r.EventID}
}

// errorClass names the innermost cause's Go type, e.g. "*sink.RecordError"
// or "kafka.Error(10)" for a broker error code.
func errorClass(err error) string {
	if err == nil {
		return "<nil>"
	}
	for {
		next := errors.Unwrap(err)
		if next == nil {
			break
		}
		err = next
	}
	t := reflect.TypeOf(err)
	if t.Kind() == reflect.Int16 { // kafka.Error: the code says more than the type
		return t.String() + "(" + strconv.FormatInt(reflect.ValueOf(err).Int(), 10) + ")"
	}
	return t.String()
}

// DeadLetter sends r to errors.deadletterqueue.topic.name with error
// headers (see DeadLetterRecord); the topic is created with one partition
// when missing. It acknowledges like Send. A record too large for Kafka is
// dead-lettered without its value (the headers say why), since the copy
// would be refused too.
func (p *Producer) DeadLetter(ctx context.Context, r Record, cause error, meta DLQMeta, onAck func(error)) error {
	if p.cfg.DeadLetterTopic == "" {
		return ErrNoDeadLetterTopic
	}
	d := DeadLetterRecord(p.cfg.DeadLetterTopic, r, cause, meta)
	if recordSize(d)+batchOverhead > p.cfg.MaxRequestSize {
		d.Value = nil
	}
	if err := p.Send(ctx, d, onAck); err != nil {
		return fmt.Errorf("sink: dead-lettering event id %q: %w", r.EventID, err)
	}
	return nil
}
