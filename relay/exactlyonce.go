package relay

import (
	"context"
	"errors"
	"sync"

	"github.com/outboxrelay/outboxrelay/capture"
	"github.com/outboxrelay/outboxrelay/router"
	"github.com/outboxrelay/outboxrelay/sink"
)

// Transactional is a Sink that writes whole PostgreSQL transactions in
// Kafka transactions (exactly.once.support=required, invariant 10). The
// session marks each PostgreSQL commit with Boundary; Send's ack means
// "written inside the open Kafka transaction", so the position confirmed
// to PostgreSQL is held at what Kafka committed (committedProgress).
type Transactional interface {
	Sink
	// Boundary ends a PostgreSQL transaction at end (0: a point between
	// snapshot rows or after a heartbeat, with no position to record).
	Boundary(end capture.LSN)
	// Committed returns the position the last Kafka commit recorded and
	// whether every record sent is committed.
	Committed() (capture.LSN, bool)
	// Err is the failure that ended the sink's transactions: retried as a
	// new session (sink.ErrTxnAborted) or final (sink.ErrTxnFenced,
	// sink.ErrTxnRejected).
	Err() error
	// SessionOrigin sets the server and timeline of the positions this
	// session records and returns those of the position Load read ("":
	// unknown).
	SessionOrigin(server string) (recorded string)
}

// TxnSink adapts sink.TxnSink to Transactional, and is the session's
// PositionStore too: Load starts the sink's session (fencing an older
// instance) and reads the last committed position back read_committed;
// Save records nothing, because every Kafka transaction records its own.
type TxnSink struct {
	S        *sink.TxnSink
	buf      recordBuffer
	recorded string // the origin of the position Load read
}

// Send converts the router's record for the sink; a record too large for
// Kafka is rejected as poison.
func (t *TxnSink) Send(ctx context.Context, r *router.Record, ack func(error)) error {
	return rejectTooLarge(t.S.Send(ctx, t.buf.record(r), ack))
}

// Flush commits up to the last boundary.
func (t *TxnSink) Flush(ctx context.Context) error { return t.S.Flush(ctx) }

// Boundary ends a PostgreSQL transaction.
func (t *TxnSink) Boundary(end capture.LSN) { t.S.Boundary(uint64(end)) }

// Committed is what Kafka committed.
func (t *TxnSink) Committed() (capture.LSN, bool) {
	pos, all := t.S.Committed()
	return capture.LSN(pos), all
}

// Err is the sink's failure.
func (t *TxnSink) Err() error { return t.S.Err() }

// Load starts the sink's session and reads the committed position.
func (t *TxnSink) Load(ctx context.Context) (Recorded, bool, error) {
	pos, found, err := loadRecorded(ctx, t.S.Start, t.S.Offsets())
	t.recorded = pos.Origin
	return pos, found, err
}

// SessionOrigin sets the session's origin, returning the loaded one's.
func (t *TxnSink) SessionOrigin(server string) string {
	t.S.SetOrigin(server)
	return t.recorded
}

// Save records nothing: each Kafka transaction carries its position.
func (t *TxnSink) Save(_ context.Context, _ capture.LSN, _ string, ack func(error)) error {
	ack(nil)
	return nil
}

// Where names the offsets topic.
func (t *TxnSink) Where() string {
	return "offsets topic " + t.S.Offsets().Topic() + " (read_committed)"
}

// Forget says how to delete the recorded position.
func (t *TxnSink) Forget() string { return KafkaPositions{O: t.S.Offsets()}.Forget() }

// committedProgress is what the stream may confirm with a transactional
// sink: the checkpoint's position (every record written), held at the
// position of the last Kafka commit while records are not committed.
// The checkpoint is read first: if every record sent is committed after
// that read, so are the records it counted.
type committedProgress struct {
	*Checkpoint
	sink  Transactional
	start capture.LSN // the slot's confirmed position: confirmed already

	mu   sync.Mutex
	high capture.LSN // the most Confirmed returned: it never goes back
}

// Confirmed is the position covered by Kafka commits, never lower than
// what it returned before.
func (p *committedProgress) Confirmed() capture.LSN {
	c := p.Checkpoint.Confirmed()
	pos, all := p.sink.Committed()
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
// position at confirm speed, not at the next status interval.
func (p *committedProgress) InFlight() int {
	n := p.Checkpoint.InFlight()
	if _, all := p.sink.Committed(); !all {
		n = max(n, 1)
	}
	return n
}

var _ capture.Progress = (*committedProgress)(nil)

// checkTransactional refuses a Transactional sink that is not also
// Options.Positions: its Load starts the sink's sessions, without which
// every transaction fails.
func checkTransactional(opt Options) error {
	if _, ok := opt.Sink.(Transactional); !ok {
		return nil
	}
	if ps, _ := opt.Sink.(PositionStore); ps == nil || ps != opt.Positions {
		return errors.New("relay.Run: a Transactional sink must also be Options.Positions (its Load starts each session's Kafka transactions)")
	}
	return nil
}

// transactional returns the sink as Transactional, or nil.
func (s *session) transactional() Transactional {
	t, _ := s.opt.Sink.(Transactional)
	return t
}

// allCommitted says whether Kafka committed every record sent (always,
// without a transactional sink, where an ack is the commit): a slot is
// dropped on stop only then, because the open Kafka transaction is
// aborted when the sink closes.
func (s *session) allCommitted() bool {
	if s.txs == nil {
		return true
	}
	_, all := s.txs.Committed()
	return all
}

// Close aborts an open Kafka transaction and stops the sink.
func (t *TxnSink) Close() error { return t.S.Close() }

// fenced makes a fenced sink the session's outcome, whatever else ended
// it (a zombie's PostgreSQL connections fail first): the relay stops
// instead of competing for the slot again.
func (s *session) fenced(cause error) error {
	if s.txs != nil {
		if err := s.txs.Err(); errors.Is(err, sink.ErrTxnFenced) {
			return err
		}
	}
	return cause
}

// lockHolder is a Source with a failover lock it can check
// (replication.Source.Holds).
type lockHolder interface {
	Holds(ctx context.Context) (bool, error)
}

// holdsLock gives an exactly-once sink the source's lock check: the sink
// asks the coordinator whether a fenced transaction timed out only while
// this instance holds the lock (the question fences the holder's
// transaction). A source without a lock has no standby: the sink asks.
func holdsLock(src capture.Source, pos PositionStore) {
	t, ok := pos.(*TxnSink)
	h, locked := src.(lockHolder)
	if ok && locked {
		t.S.SetHolder(h.Holds)
	}
}
