package relay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/outboxrelay/outboxrelay/router"
	"github.com/outboxrelay/outboxrelay/sink"

	"github.com/outboxrelay/outboxrelay/capture"
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

// Load reads the recorded position, Debezium's or outboxrelay's.
func (k KafkaPositions) Load(ctx context.Context) (Recorded, bool, error) {
	return loadRecorded(ctx, k.O.Load, k.O)
}

// Peek is Load without creating a missing offsets topic: what `check`
// reads.
func (k KafkaPositions) Peek(ctx context.Context) (Recorded, bool, error) {
	return loadRecorded(ctx, k.O.Read, k.O)
}

// loadRecorded reads a position with load and interprets it; a Debezium
// snapshot that did not finish is refused (nothing says which rows of it
// reached Kafka).
func loadRecorded(ctx context.Context, load func(context.Context) (sink.Offset, bool, error), o *sink.Offsets) (Recorded, bool, error) {
	pos, found, err := load(ctx)
	if err != nil || !found {
		return Recorded{}, false, err
	}
	if pos.InSnapshot {
		return Recorded{}, false, fmt.Errorf("%w: its record under key %s in %s was written during an initial snapshot that did not finish (lsn %s): "+
			"start the Debezium connector again until its snapshot is done (its log says \"Snapshot completed\"), or delete the record "+
			"(a record with that key and a null value) to let outboxrelay start by its own snapshot.mode",
			ErrDebeziumSnapshot, o.Key(), o.Topic(), capture.LSN(pos.LSN))
	}
	return recordedFrom(pos), true, nil
}

// Save records pos.
func (k KafkaPositions) Save(ctx context.Context, pos capture.LSN, origin string, ack func(error)) error {
	return k.O.Save(ctx, sink.Offset{LSN: uint64(pos), Time: time.Now(), Origin: origin}, ack)
}

// Where names the offsets topic.
func (k KafkaPositions) Where() string { return "offsets topic " + k.O.Topic() }

// Forget says how to delete the recorded position.
func (k KafkaPositions) Forget() string {
	return fmt.Sprintf("a record with key %s and a null value in topic %s, or another offsets.storage.topic", k.O.Key(), k.O.Topic())
}
