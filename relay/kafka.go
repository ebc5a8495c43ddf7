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
	P       *sink.Producer
	headers []sink.Header
}

// Send converts the router's record for the producer; a record too large
// for Kafka is rejected as poison.
func (s *ProducerSink) Send(ctx context.Context, r *router.Record, ack func(error)) error {
	s.headers = s.headers[:0]
	for _, h := range r.Headers {
		s.headers = append(s.headers, sink.Header{Key: h.Key, Value: h.Value})
	}
	err := s.P.Send(ctx, sink.Record{
		Topic:     r.Topic,
		Partition: r.Partition,
		Key:       r.Key,
		Value:     r.Value,
		Headers:   s.headers,
		Timestamp: r.Timestamp,
		EventID:   r.EventID,
	}, ack)
	if errors.Is(err, sink.ErrRecordTooLarge) {
		// The record, not the connection, is at fault: a poison row.
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
