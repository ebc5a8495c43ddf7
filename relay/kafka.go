package relay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pglogrepl"

	"github.com/outboxrelay/outboxrelay/router"
	"github.com/outboxrelay/outboxrelay/sink"
)

// ErrRecordRejected marks a Sink.Send error that condemns the record, not
// the connection (e.g. larger than max.request.size): the row is poison.
var ErrRecordRejected = errors.New("record rejected")

// ProducerSink adapts the Kafka producer to the relay's Sink. The session
// goroutine is its only caller, so one header buffer is reused; the
// producer copies the record before Send returns.
type ProducerSink struct {
	P   *sink.Producer
	buf recordBuffer
}

// Send converts the router's record for the producer; a record too large
// for Kafka is rejected as poison.
func (s *ProducerSink) Send(ctx context.Context, r *router.Record, ack func(error)) error {
	return rejectTooLarge(s.P.Send(ctx, s.buf.record(r), ack))
}

// recordBuffer converts the router's records for the sink, reusing one
// header buffer: the sink copies a record before its Send returns.
type recordBuffer struct{ headers []sink.Header }

func (b *recordBuffer) record(r *router.Record) sink.Record {
	b.headers = b.headers[:0]
	for _, h := range r.Headers {
		b.headers = append(b.headers, sink.Header{Key: h.Key, Value: h.Value})
	}
	return sink.Record{Topic: r.Topic, Partition: r.Partition, Key: r.Key, Value: r.Value,
		Headers: b.headers, Timestamp: r.Timestamp, EventID: r.EventID}
}

// rejectTooLarge marks a record too large for Kafka as ErrRecordRejected:
// the record, not the connection, is at fault (a poison row).
func rejectTooLarge(err error) error {
	if errors.Is(err, sink.ErrRecordTooLarge) {
		return fmt.Errorf("%w: %w", ErrRecordRejected, err)
	}
	return err
}

// Flush waits for every record sent so far.
func (s *ProducerSink) Flush(ctx context.Context) error { return s.P.Flush(ctx) }

// KafkaPositions keeps the position in the offsets topic (sink.Offsets).
type KafkaPositions struct{ O *sink.Offsets }

// Load reads the recorded position.
func (k KafkaPositions) Load(ctx context.Context) (pglogrepl.LSN, bool, error) {
	pos, found, err := k.O.Load(ctx)
	return pglogrepl.LSN(pos.LSN), found, err
}

// Save records pos.
func (k KafkaPositions) Save(ctx context.Context, pos pglogrepl.LSN, ack func(error)) error {
	return k.O.Save(ctx, sink.Offset{LSN: uint64(pos), Time: time.Now()}, ack)
}

// Where names the offsets topic.
func (k KafkaPositions) Where() string { return "offsets topic " + k.O.Topic() }

// Forget says how to delete the recorded position.
func (k KafkaPositions) Forget() string {
	return fmt.Sprintf("a record with key %s and a null value in topic %s, or another offsets.storage.topic", k.O.Key(), k.O.Topic())
}
