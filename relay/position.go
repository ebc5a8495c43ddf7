package relay

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/outboxrelay/outboxrelay/capture"
	"github.com/outboxrelay/outboxrelay/sink"
)

// PositionStore keeps the confirmed position outside the database (the
// offsets topic, see sink.Offsets), where it survives a failover that the
// slot may not. It lets a source refuse to replace a slot that is gone
// while events were delivered from it (invariant 9), and a session skip
// what was delivered already when the slot lags behind it.
type PositionStore interface {
	// Load returns the recorded position; found is false on a first start.
	Load(ctx context.Context) (pos Recorded, found bool, err error)
	// Save records pos, on the server and timeline origin; ack reports
	// Kafka's answer.
	Save(ctx context.Context, pos capture.LSN, origin string, ack func(error)) error
	// Where and Forget say, for messages, where the position is kept and
	// how to delete it.
	Where() string
	Forget() string
}

// Recorded is a position read back from a PositionStore.
type Recorded struct {
	// End: every transaction whose commit ends at or before it was
	// delivered.
	End capture.LSN
	// Within: the transaction after End was delivered up to this point
	// too (Debezium records the last event it processed).
	Within capture.Within
	Origin string // the server and timeline ("": not recorded)
	By     string // "outboxrelay" or "Debezium"
}

// Writers of a recorded position.
const (
	ByRelay    = "outboxrelay"
	ByDebezium = "Debezium"
)

// ErrDebeziumSnapshot: the recorded position is Debezium's, written during
// an initial snapshot that did not finish; nothing says which rows it sent.
var ErrDebeziumSnapshot = errors.New("the recorded position is an unfinished Debezium snapshot")

// recordedFrom reads a recorded offset with Debezium's own resume rule
// (PostgresOffsetContext.Loader, PostgresStreamingChangeEventSource and
// WalPositionLocator in Debezium 3.7): lsn_commit is the end of the last
// transaction it completed (lsn_proc when absent); a messageType of a
// row or a transactional message means lsn_proc is the last event it
// processed inside the next transaction (txId), the lsn_events_processed-th
// at that LSN; a non-transactional message (no txId: PgOutputMessageDecoder
// clears it) was processed whole. A transactional message has lsn_commit =
// lsn_proc too (Debezium's commitMessage runs for it), which Debezium's own
// locator takes for a non-transactional one (debezium/dbz#2004). A
// message's LSN is the end of its WAL record (pgoutput sends endptr), which
// may be the LSN of the next row: the count at that LSN tells them apart
// (debezium/dbz#2058). outboxrelay writes lsn = lsn_proc = lsn_commit and
// COMMIT: a position between transactions.
func recordedFrom(o sink.Offset) Recorded {
	r := Recorded{Origin: o.Origin, By: ByDebezium}
	if o.ByRelay {
		r.By = ByRelay
	}
	proc := capture.LSN(cmp.Or(o.Proc, o.LSN))
	r.End = capture.LSN(cmp.Or(o.Commit, uint64(proc)))
	switch o.Type {
	case "MESSAGE":
		if o.Xid == 0 { // non-transactional (Debezium records no txId): its own "transaction" at proc
			r.End = max(r.End, proc+1)
			break
		}
		fallthrough
	case "INSERT", "UPDATE", "DELETE", "TRUNCATE":
		if o.Xid > 0 && o.Xid <= math.MaxUint32 {
			r.Within = capture.Within{Xid: uint32(o.Xid), LSN: proc, Count: max(o.Events, 1)}
		}
	}
	return r
}

// loadPosition reads the recorded position before every session, once
// the source may stream: a standby that takes over reads what the active
// instance recorded.
func (r *relay) loadPosition(ctx context.Context) error {
	store := r.opt.Positions
	if store == nil {
		return nil
	}
	pos, found, err := store.Load(ctx)
	if err != nil {
		return fmt.Errorf("reading the recorded position from %s: %w", store.Where(), err)
	}
	r.known.RecordedIn, r.known.Forget = store.Where(), store.Forget()
	if !found {
		return nil
	}
	k := capture.Known{Confirmed: r.known.Confirmed, Recorded: pos.End, Within: pos.Within, RecordedOrigin: pos.Origin, RecordedBy: pos.By,
		RecordedIn: r.known.RecordedIn, Forget: r.known.Forget}
	if k != r.known {
		r.opt.Log.Info("recorded position", "lsn", pos.End.String(), "by", pos.By, "in", store.Where(), withinAttrs(pos.Within))
	}
	r.known = k
	return nil
}

// withinAttrs logs a point inside a transaction, if any.
func withinAttrs(w capture.Within) slog.Attr {
	if w.Count == 0 {
		return slog.Attr{}
	}
	return slog.Group("within", "xid", w.Xid, "lsn", w.LSN.String(), "events", w.Count)
}

// skipCommitted reports whether a transaction beginning with ev ends at
// or below the recorded position: it is in Kafka already (acknowledged,
// or committed with exactly-once), and is skipped, as Debezium skips what
// its offsets cover although the slot it flushed lags behind them.
func (s *session) skipCommitted(ev *capture.Event) bool {
	return s.skipOK && !ev.Snapshot && ev.LSN < s.known.Recorded
}

// withinPoint is the point inside the transaction beginning with ev up to
// which it was delivered (Known.Within, Debezium's mid-transaction
// position), or none. It applies once, to the transaction with its id
// that follows the recorded position.
func (s *session) withinPoint(ev *capture.Event) capture.Within {
	w := s.known.Within
	if !s.skipOK || ev.Snapshot || w.Count == 0 || ev.Xid != w.Xid || ev.LSN < s.known.Recorded {
		return capture.Within{}
	}
	s.known.Within = capture.Within{}
	return w
}

// delivered reports whether a row of the transaction being read is at or
// before its point (withinPoint): rows before its LSN, and the first
// Count rows at it.
func (s *session) delivered(lsn capture.LSN) bool {
	if s.within.Count == 0 {
		return false
	}
	if lsn == s.within.LSN {
		s.atWithin++
	}
	return s.within.Delivered(lsn, s.atWithin)
}

// skipAllowed decides once per session whether the skip rule applies, and
// gives the sink and the recorder the stream's origin. It applies on the
// slot the position was recorded from: a resumed slot, on the recorded
// server and timeline, or, for a position Debezium recorded (it records
// neither), a resumed slot, as Debezium's own rule trusts its offsets.
// After a failover (a new timeline), a restore elsewhere or a slot created
// anew, the WAL below the recorded position is not the WAL Kafka has, and
// skipping would lose its transactions: it warns and skips nothing (what
// Kafka has in that window is sent again).
func (s *session) skipAllowed(st capture.Stream) bool {
	server, resumed := "", false
	if o, ok := st.(capture.Origin); ok {
		server, resumed = o.Origin()
	}
	s.origin = server
	if s.txs != nil {
		s.txs.SessionOrigin(server)
	}
	recorded := s.known.RecordedOrigin
	switch {
	case s.known.Recorded == 0:
		return true
	case resumed && server != "" && (recorded == server || recorded == "" && s.known.RecordedBy == ByDebezium):
		if st.From() < s.known.Recorded {
			s.log.Info("the slot is behind the recorded position: skipping what the position covers (in Kafka already)",
				"slot_confirmed", st.From().String(), "recorded", s.known.Recorded.String(), "by", s.known.RecordedBy,
				"skip_wal_bytes", uint64(s.known.Recorded-st.From()), withinAttrs(s.known.Within))
		}
		return true
	}
	s.log.Warn("the recorded position is not on this stream's server, timeline and slot: skipping nothing below it (transactions Kafka has may be sent again)",
		"recorded", s.known.Recorded.String(), "recorded_origin", recorded, "stream_origin", server, "slot_resumed", resumed)
	return false
}

// recorder saves the session's confirmed position every interval while it
// moves, and once more when stopped; each save is asynchronous, in order.
type recorder struct {
	store  PositionStore
	ck     *Checkpoint
	log    interface{ Warn(string, ...any) }
	mu     sync.Mutex
	saved  capture.LSN // last position handed to the store
	origin string      // the stream's server and timeline
	// failed is the first position Kafka refused for good: without it a
	// lost slot would go unnoticed, so the session stops (Err).
	failed error
}

// Err returns the failure that stops the session, if any.
func (rc *recorder) Err() error {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.failed
}

func (rc *recorder) fail(pos capture.LSN, err error) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.failed == nil {
		rc.failed = fmt.Errorf("%w: recording the confirmed position %s in %s: %w", ErrRecordFailed, pos, rc.store.Where(), err)
	}
}

// run saves every interval until ctx ends.
func (rc *recorder) run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			rc.save(ctx)
		}
	}
}

// save hands the confirmed position to the store when it moved.
func (rc *recorder) save(ctx context.Context) {
	pos := rc.ck.Confirmed()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if pos <= rc.saved {
		return
	}
	// The sink retries transient errors itself: an error here is final.
	err := rc.store.Save(ctx, pos, rc.origin, func(err error) {
		if err != nil {
			rc.fail(pos, err)
		}
	})
	if err != nil && ctx.Err() == nil {
		rc.failed = fmt.Errorf("%w: recording the confirmed position %s in %s: %w", ErrRecordFailed, pos, rc.store.Where(), err)
		return
	}
	rc.saved = pos
}
