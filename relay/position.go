package relay

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/outboxrelay/outboxrelay/capture"
)

// openDelivery opens the delivery before every session, once the source
// may stream, and reads the recorded position: a standby that takes over
// reads what the active instance recorded. The recorded position lets a
// source refuse to replace a slot that is gone while events were
// delivered from it (invariant 9), and a session skip what was delivered
// already when the slot lags behind it.
func (r *relay) openDelivery(ctx context.Context) error {
	out := r.opt.Delivery
	pos, found, err := out.Open(ctx, Opening{Holds: r.opt.Source.Holds})
	if err != nil {
		if out.Where() == "" {
			return fmt.Errorf("opening delivery: %w", err)
		}
		return fmt.Errorf("reading the recorded position from %s: %w", out.Where(), err)
	}
	if out.Where() == "" {
		return nil // positions are recorded nowhere
	}
	r.known.RecordedIn, r.known.Forget = out.Where(), out.Forget()
	if !found {
		return nil
	}
	k := capture.Known{Confirmed: r.known.Confirmed, Recorded: pos.End, Within: pos.Within, RecordedOrigin: pos.Origin, RecordedBy: pos.By,
		RecordedIn: r.known.RecordedIn, Forget: r.known.Forget}
	if k != r.known {
		r.opt.Log.Info("recorded position", "lsn", pos.End.String(), "by", pos.By, "in", out.Where(), withinAttrs(pos.Within))
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
// keeps the stream's origin for the delivery and the recorder. It applies on the
// slot the position was recorded from: a resumed slot, on the recorded
// server and timeline, or, for a position Debezium recorded (it records
// neither), a resumed slot, as Debezium's own rule trusts its offsets.
// After a failover (a new timeline), a restore elsewhere or a slot created
// anew, the WAL below the recorded position is not the WAL Kafka has, and
// skipping would lose its transactions: it warns and skips nothing (what
// Kafka has in that window is sent again).
func (s *session) skipAllowed(st capture.Stream) bool {
	server, resumed := st.Origin()
	s.origin = server
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
	out    Delivery
	ck     *Checkpoint
	log    interface{ Warn(string, ...any) }
	mu     sync.Mutex
	saved  capture.LSN // last position handed to the delivery
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
		rc.failed = fmt.Errorf("%w: recording the confirmed position %s in %s: %w", ErrRecordFailed, pos, rc.out.Where(), err)
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

// save hands the confirmed position to the delivery when it moved.
func (rc *recorder) save(ctx context.Context) {
	pos := rc.ck.Confirmed()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if pos <= rc.saved {
		return
	}
	// The delivery retries transient errors itself: an error here is final.
	err := rc.out.Record(ctx, pos, rc.origin, func(err error) {
		if err != nil {
			rc.fail(pos, err)
		}
	})
	if err != nil && ctx.Err() == nil {
		rc.failed = fmt.Errorf("%w: recording the confirmed position %s in %s: %w", ErrRecordFailed, pos, rc.out.Where(), err)
		return
	}
	rc.saved = pos
}
