package sink

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/outboxrelay/outboxrelay/capture"
	"github.com/outboxrelay/outboxrelay/internal/certerr"
	"github.com/outboxrelay/outboxrelay/internal/terminal"
	"github.com/outboxrelay/outboxrelay/relay"
	"github.com/outboxrelay/outboxrelay/router"
)

// AtLeastOnce is the relay's at-least-once delivery (relay.Delivery): the
// producer sends each record, its acknowledgement is the ack, and a
// confirmed position is recorded in the offsets topic. With no offsets
// topic (poll mode: the table is the position) it records nothing and
// finds nothing.
type AtLeastOnce struct {
	producer *Producer
	offsets  *Offsets // nil: positions are recorded nowhere
}

// NewAtLeastOnce returns the at-least-once delivery through p, recording
// positions in offsets (nil: nowhere).
func NewAtLeastOnce(p *Producer, offsets *Offsets) *AtLeastOnce {
	return &AtLeastOnce{producer: p, offsets: offsets}
}

var _ relay.Delivery = (*AtLeastOnce)(nil)

// Open reads the recorded position, Debezium's or outboxrelay's, creating
// a missing offsets topic.
func (d *AtLeastOnce) Open(ctx context.Context, _ relay.Opening) (relay.Recorded, bool, error) {
	if d.offsets == nil {
		return relay.Recorded{}, false, nil
	}
	pos, found, err := d.offsets.Recorded(d.offsets.Load(ctx))
	return pos, found, markCert(err)
}

// Peek is Open without creating a missing offsets topic: what `check`
// reads.
func (d *AtLeastOnce) Peek(ctx context.Context) (relay.Recorded, bool, error) {
	if d.offsets == nil {
		return relay.Recorded{}, false, nil
	}
	return d.offsets.Recorded(d.offsets.Read(ctx))
}

// Confirmable is the checkpoint's progress: an acknowledgement is the
// delivery.
func (d *AtLeastOnce) Confirmable(ck capture.Progress, _ relay.Streaming) capture.Progress { return ck }

// Send hands the router's record to the producer, which copies it before
// returning; a record too large for Kafka is rejected as poison.
func (d *AtLeastOnce) Send(ctx context.Context, r *router.Record, ack func(error)) error {
	return Marked(d.producer.Send(ctx, *r, ack))
}

// End means nothing at least once: every record is delivered on its own.
func (d *AtLeastOnce) End(capture.LSN) {}

// Record writes pos to the offsets topic (acknowledging at once when
// positions are recorded nowhere).
func (d *AtLeastOnce) Record(ctx context.Context, pos capture.LSN, origin string, ack func(error)) error {
	if d.offsets == nil {
		ack(nil)
		return nil
	}
	return d.offsets.Save(ctx, Offset{LSN: pos, Time: time.Now(), Origin: origin}, ack)
}

// Where names the offsets topic ("": none).
func (d *AtLeastOnce) Where() string {
	if d.offsets == nil {
		return ""
	}
	return "offsets topic " + d.offsets.Topic()
}

// Forget says how to delete the recorded position.
func (d *AtLeastOnce) Forget() string {
	if d.offsets == nil {
		return ""
	}
	return d.offsets.Forget()
}

// Flush waits for every record sent so far.
func (d *AtLeastOnce) Flush(ctx context.Context) error { return markCert(d.producer.Flush(ctx)) }

// Err is nil: a record the producer gives up on fails through its ack.
func (d *AtLeastOnce) Err() error { return nil }

// Close leaves the producer open: the wiring closes it after the relay
// stopped (its dead-letter topic and pings share it).
func (d *AtLeastOnce) Close() error { return nil }

// Forget says how to delete the position recorded in o.
func (o *Offsets) Forget() string {
	return fmt.Sprintf("a record with key %s and a null value in topic %s, or another offsets.storage.topic", o.Key(), o.Topic())
}

// Marked marks what a delivery's error means for the relay: a record too
// large for Kafka is relay.ErrRecordRejected (the record, not the
// connection, is at fault: a poison row), a certificate that does not
// verify is final (markCert).
func Marked(err error) error {
	if err == nil {
		return nil // the hot path: certerr.Failed allocates
	}
	if errors.Is(err, ErrRecordTooLarge) {
		return fmt.Errorf("%w: %w", relay.ErrRecordRejected, err)
	}
	return markCert(err)
}

// markCert marks a certificate that does not verify as final: it will not
// verify on the next session either. An error marked already keeps its
// mark: an aborted transaction (a session error) whose cause is a
// certificate is retried, as internal/terminal says.
func markCert(err error) error {
	if err != nil && !terminal.IsFinal(err) && !terminal.IsSession(err) && certerr.Failed(err) {
		return terminal.Final(err)
	}
	return err
}

// DeadLetters is the relay's dead-letter target (relay.DeadLetterer) on
// p: errors.deadletterqueue.topic.name.
func DeadLetters(p *Producer) relay.DeadLetterer { return deadLetters{p} }

type deadLetters struct{ producer *Producer }

func (d deadLetters) DeadLetter(ctx context.Context, r *router.Record, cause error, meta relay.DeadLetterMeta, onAck func(error)) error {
	return d.producer.DeadLetter(ctx, *r, cause, DLQMeta{LSN: meta.LSN, SourceTable: meta.SourceTable, ConnectorName: meta.ConnectorName, Stage: meta.Stage}, onAck)
}
