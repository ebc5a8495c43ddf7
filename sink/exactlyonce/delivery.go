package exactlyonce

import (
	"context"
	"sync"

	"github.com/outboxrelay/outboxrelay/capture"
	"github.com/outboxrelay/outboxrelay/relay"
	"github.com/outboxrelay/outboxrelay/router"
	"github.com/outboxrelay/outboxrelay/sink"
)

// Delivery is the relay's exactly-once delivery (relay.Delivery,
// exactly.once.support=required, invariant 10) on a Sink: each Kafka
// transaction holds the records of whole PostgreSQL transactions and the
// position after them; Open starts the sink's session (fencing an older
// instance) and reads the last committed position back read_committed;
// the position confirmed to PostgreSQL is held at what Kafka committed.
type Delivery struct {
	txn *Sink
}

// NewDelivery returns the exactly-once delivery on txn.
func NewDelivery(txn *Sink) *Delivery { return &Delivery{txn: txn} }

var _ relay.Delivery = (*Delivery)(nil)

// Open gives the sink the source's failover lock check (asked before the
// coordinator whether a fenced transaction timed out: the question fences
// the holder's transaction), starts the sink's session and reads the
// committed position.
func (d *Delivery) Open(ctx context.Context, s relay.Opening) (relay.Recorded, bool, error) {
	if s.Holds != nil {
		d.txn.SetHolder(s.Holds)
	}
	pos, found, err := d.txn.Offsets().Recorded(d.txn.Start(ctx))
	return pos, found, sink.Marked(err)
}

// Confirmable sets the origin each Kafka commit records and holds the
// checkpoint's progress at what Kafka committed.
func (d *Delivery) Confirmable(ck capture.Progress, st relay.Streaming) capture.Progress {
	d.txn.SetOrigin(st.Origin)
	return &committedProgress{Progress: ck, txn: d.txn, start: st.From}
}

// Send hands a record to the open Kafka transaction; a record too large
// for Kafka is rejected as poison.
func (d *Delivery) Send(ctx context.Context, r *router.Record, ack func(error)) error {
	return sink.Marked(d.txn.Send(ctx, *r, ack))
}

// End ends a PostgreSQL transaction: a Kafka transaction may commit there.
func (d *Delivery) End(end capture.LSN) { d.txn.Boundary(end) }

// Record records nothing: each Kafka commit carries its position, so the
// confirmed position (never ahead of it) is durable already.
func (d *Delivery) Record(_ context.Context, _ capture.LSN, _ string, ack func(error)) error {
	ack(nil)
	return nil
}

// Where names the offsets topic.
func (d *Delivery) Where() string {
	return "offsets topic " + d.txn.Offsets().Topic() + " (read_committed)"
}

// Forget says how to delete the recorded position.
func (d *Delivery) Forget() string { return d.txn.Offsets().Forget() }

// Flush commits up to the last End.
func (d *Delivery) Flush(ctx context.Context) error { return sink.Marked(d.txn.Flush(ctx)) }

// Err is the failure that ended the sink's transactions: ErrAborted
// (a new session resumes) or ErrFenced and ErrRejected (final).
func (d *Delivery) Err() error { return sink.Marked(d.txn.Err()) }

// Close aborts an open Kafka transaction and stops the sink.
func (d *Delivery) Close() error { return d.txn.Close() }

// committedProgress is what the stream may confirm with Kafka
// transactions: the checkpoint's position (every record written), held at
// the position of the last Kafka commit while records are not committed.
// The checkpoint is read first: if every record sent is committed after
// that read, so are the records it counted.
type committedProgress struct {
	capture.Progress
	txn   committer
	start capture.LSN // the slot's confirmed position: confirmed already

	mu   sync.Mutex
	high capture.LSN // the most Confirmed returned: it never goes back
}

// committer is what committedProgress reads of a Sink (a fake in tests).
type committer interface {
	Committed() (position capture.LSN, all bool)
}

// Confirmed is the position covered by Kafka commits, never lower than
// what it returned before.
func (p *committedProgress) Confirmed() capture.LSN {
	c := p.Progress.Confirmed()
	pos, all := p.txn.Committed()
	if !all {
		c = max(min(c, pos), p.start)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.high = max(p.high, c)
	return p.high
}

// InFlight counts the records not yet committed in Kafka as in flight
// (at least one while any is), so that the stream reports the commit's
// position at confirm speed, not at the next status interval, and a slot
// is dropped on stop only when Kafka committed everything.
func (p *committedProgress) InFlight() int {
	n := p.Progress.InFlight()
	if _, all := p.txn.Committed(); !all {
		n = max(n, 1)
	}
	return n
}
