// Package relay is outboxrelay's data path, in one place:
//
//	source (capture.Stream) ──Begin/Row/Commit/Idle──▶ session.loop
//	    row ──router.Route──▶ records ──Delivery.Send(record, ack)──▶ Kafka
//	    ack ──▶ Checkpoint (per transaction, in commit order) ──▶ Confirmed
//	    the source reads Confirmed (capture.Progress) and confirms it to the server
//
// A source yields decoded transactions; the router turns each row into
// records; the delivery sends them and calls each record's ack when Kafka
// acknowledged it (exactly-once: wrote it in the open Kafka transaction,
// see Delivery); the checkpoint turns acknowledgements into the position
// that may be confirmed; the source is told that position. Errors a row
// causes go through one policy (Poison: errors.tolerance, dead-letter
// topic, or stop). The in-flight budget bounds what is between the source
// and Kafka. Run retries lost sessions and decides, in retryable, what
// stops the relay instead.
//
// DESIGN.md at the repository root names the invariants cited here.
package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/outboxrelay/outboxrelay/capture"
	"github.com/outboxrelay/outboxrelay/internal/terminal"
	"github.com/outboxrelay/outboxrelay/router"
)

// Options wires the data path. Source, Router, Delivery and Log are
// required.
type Options struct {
	Source   capture.Source
	Router   *router.Router
	Delivery Delivery
	Log      *slog.Logger
	Observer Observer // nil: none
	// Poison decides what happens to a poison row; nil stops at it
	// (errors.tolerance=none). See NewPoisonPolicy.
	Poison Poison
	// HeartbeatTopic receives a heartbeat record at every heartbeat the
	// source yields.
	HeartbeatTopic string
	// MaxInFlightRecords and MaxInFlightBytes bound the records handed to
	// the sink and not yet acknowledged (invariant 5). Defaults 10000 and
	// 64 MiB; the wiring sets the bytes to the producer's buffer.memory.
	MaxInFlightRecords int
	MaxInFlightBytes   int64
	// MaxRetries (errors.max.retries; negative: forever) bounds the
	// sessions that fail in a row; RetryWait caps the backoff between them.
	MaxRetries int
	RetryWait  time.Duration
	// RecordEvery (default 1 s) is how often the confirmed position is
	// handed to Delivery.Record while it moves.
	RecordEvery time.Duration
	// Tracing records the spans of traced events (relay/trace.go); its
	// zero value records none.
	Tracing Tracing
	// Convert, when set, rewrites each record's key and value after the
	// router and before the delivery (the schema-registry converters;
	// see Converter).
	Convert Converter
}

// DefaultMaxInFlightRecords is Options.MaxInFlightRecords's default.
const DefaultMaxInFlightRecords = 10000

// drainLimit bounds how long a stop waits for the transaction being read
// to end (see session.loop).
const drainLimit = 10 * time.Second

// Run relays until ctx is cancelled (an orderly stop: returns nil after
// flushing Kafka and confirming what it acknowledged), the source has
// nothing more to stream, or a permanent error (a poison row, a bad config,
// a missing publication). Lost sessions are retried with capped backoff,
// resuming from the confirmed position.
func Run(ctx context.Context, opt Options) error {
	if opt.Source == nil || opt.Router == nil || opt.Delivery == nil || opt.Log == nil {
		return errors.New("relay.Run: Source, Router, Delivery and Log are required")
	}
	if opt.Observer == nil {
		opt.Observer = nopObserver{}
	}
	opt.MaxInFlightRecords = orDefault(opt.MaxInFlightRecords, DefaultMaxInFlightRecords)
	opt.MaxInFlightBytes = orDefault(opt.MaxInFlightBytes, 64<<20)
	opt.RetryWait = orDefault(opt.RetryWait, 10*time.Second)
	opt.RecordEvery = orDefault(opt.RecordEvery, time.Second)
	budget, err := NewBudget(opt.MaxInFlightRecords, opt.MaxInFlightBytes)
	if err != nil {
		return fmt.Errorf("relay.Run: %w", err)
	}
	r := &relay{opt: opt, budget: budget}
	defer opt.Source.Close()
	defer opt.Delivery.Close()
	defer r.state(capture.StateStopped)
	return r.retry(ctx)
}

// orDefault is v, or def when v is not positive.
func orDefault[T int | int64 | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

type relay struct {
	opt    Options
	budget *Budget
	// known carries what earlier sessions confirmed into the next, in case
	// the last status update never reached the server, and the position
	// recorded in the offsets topic.
	known capture.Known
}

func (r *relay) state(s capture.State) { r.opt.Observer.State(s) }

// runSession is one session from Open to Close: the data path.
func (r *relay) runSession(ctx context.Context) error {
	if err := r.opt.Source.Acquire(ctx); err != nil {
		return err
	}
	if err := r.openDelivery(ctx); err != nil {
		return err
	}
	st, err := r.opt.Source.Open(ctx, r.known)
	if err != nil {
		return err
	}
	s := &session{relay: r, st: st, ck: NewCheckpoint(st.From()), log: r.opt.Log}
	s.skipOK = s.skipAllowed(st)
	s.progress = s.opt.Delivery.Confirmable(s.ck, Streaming{Origin: s.origin, From: st.From()})
	stopRecording := s.record()
	err = st.Start(ctx, s.progress)
	if err == nil {
		err = s.loop(ctx)
	}
	err = s.finish(ctx, err, stopRecording)
	r.known.Confirmed = s.progress.Confirmed()
	return err
}

// record starts the recorder of the session's confirmed position; the
// returned function stops it after one last save.
func (s *session) record() (stop func(context.Context)) {
	if s.opt.Delivery.Where() == "" {
		return func(context.Context) {}
	}
	// A position the session trusts (skipOK) is never replaced by a lower
	// one: the slot may lag it by transactions the session skips, and by
	// the point inside the next one that Debezium recorded.
	saved := s.ck.Confirmed()
	if s.skipOK {
		saved = max(saved, s.known.Recorded)
	}
	rc := &recorder{out: s.opt.Delivery, ck: s.ck, log: s.log, saved: saved, origin: s.origin}
	s.rec = rc
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		rc.run(ctx, s.opt.RecordEvery)
	}()
	return func(fctx context.Context) {
		cancel()
		<-done
		rc.save(fctx)
	}
}

// session is one stream's worth of relaying. Its loop runs on one
// goroutine, which is the only caller of the stream (invariant 3).
type session struct {
	*relay
	st       capture.Stream
	ck       *Checkpoint
	progress capture.Progress // what the stream may confirm: Delivery.Confirmable of ck
	log      *slog.Logger
	tx       *Tx // the transaction being read, nil between Commit and Begin
	inSnap   bool
	rec      *recorder // nil when positions are recorded nowhere
	ev       router.Event
	records  []router.Record
	snapRows int64
	origin   string         // the stream's server and timeline (capture.Stream.Origin)
	skipOK   bool           // the skip rule applies (skipAllowed)
	skipping bool           // the transaction being read is in Kafka already
	within   capture.Within // the transaction being read is in Kafka up to this point
	atWithin int64          // rows read at within.LSN
}

// loop reads events until ctx ends, the stream fails, or a row or ack
// fails.
//
// A stop (ctx cancelled) between transactions returns at once. In the middle
// of one it first reads on to that transaction's Commit, for at most
// drainLimit, so that the records already sent for it are confirmed and a
// restart does not send them again; past the limit the transaction is
// abandoned and sent again, whole, after the restart. Inside a transaction
// the waits of handle (in-flight budget, the sink) run under that limit
// too, not under the stop: a stop that ended a wait for budget abandoned
// the transaction at once. The snapshot is not drained: a restart reads it
// again anyway.
func (s *session) loop(stop context.Context) error {
	drain, cancelDrain := drainContext(stop, drainLimit)
	defer cancelDrain()
	ctx := stop
	for {
		if err := s.ck.Err(); err != nil {
			return err
		}
		if s.rec != nil {
			if err := s.rec.Err(); err != nil {
				return err
			}
		}
		if err := s.opt.Delivery.Err(); err != nil {
			return err
		}
		if stop.Err() != nil {
			if s.tx == nil || s.inSnap {
				return stop.Err()
			}
			if ctx == stop {
				s.log.Info("stopping: reading to the end of the current transaction first", "lsn", s.tx.FinalLSN().String(), "limit", drainLimit.String())
				ctx = drain
			}
			if ctx.Err() != nil {
				s.log.Warn("stopping: the current transaction did not end in time; it will be sent again, whole, after a restart", "lsn", s.tx.FinalLSN().String())
				return stop.Err()
			}
		}
		ev, err := s.st.Next(ctx)
		if err != nil {
			if stop.Err() != nil && ctx.Err() != nil {
				continue // the top of the loop decides
			}
			return err
		}
		hctx := ctx
		if s.tx != nil && !s.inSnap {
			hctx = drain
		}
		if err := s.handle(hctx, ev); err != nil {
			if stop.Err() != nil && hctx.Err() != nil {
				continue // as for Next: the top of the loop decides
			}
			return err
		}
	}
}

// drainContext is done limit after stop is, or when cancelled.
func drainContext(stop context.Context, limit time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(stop))
	unhook := context.AfterFunc(stop, func() {
		t := time.NewTimer(limit)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		cancel()
	})
	return ctx, func() { unhook(); cancel() }
}

// handle acts on one event of the stream.
func (s *session) handle(ctx context.Context, ev *capture.Event) error {
	switch ev.Kind {
	case capture.KindBegin:
		tx, err := s.ck.BeginAt(ev.LSN, ev.CommitTime)
		if err != nil {
			return fmt.Errorf("transaction %s: %w", ev.LSN, err)
		}
		s.tx, s.inSnap = tx, ev.Snapshot
		s.skipping = s.skipCommitted(ev)
		s.within, s.atWithin = s.withinPoint(ev), 0
		s.ev.CommitLSN = ev.LSN
		s.ev.CommitTime = ev.CommitTime
	case capture.KindRow:
		if s.tx == nil {
			return fmt.Errorf("row of %s at %s outside a transaction", ev.Row.Table, ev.LSN)
		}
		if s.skipping || s.delivered(ev.LSN) {
			s.skip("committed_in_kafka")
			return nil
		}
		if err := s.route(ctx, s.event(ev.Row)); err != nil || !s.inSnap {
			return err
		}
		s.opt.Delivery.End(0) // the snapshot is at-least-once: it commits as it goes
	case capture.KindCommit:
		if s.tx == nil {
			return fmt.Errorf("commit %s without a transaction", ev.LSN)
		}
		if err := s.tx.Commit(ev.LSN, ev.EndLSN); err != nil {
			return fmt.Errorf("transaction %s: %w", ev.LSN, err)
		}
		if !s.skipping {
			s.opt.Delivery.End(ev.EndLSN) // a Kafka transaction may end here
		}
		s.tx, s.skipping, s.within = nil, false, capture.Within{}
	case capture.KindIdle:
		// Invariant 2: the checkpoint confirms an idle position only when
		// nothing is open or in flight.
		s.ck.Idle(ev.LSN)
	case capture.KindHeartbeat:
		return s.heartbeat(ctx, ev.CommitTime)
	case capture.KindSnapshotDone:
		return s.snapshotDone(ctx)
	}
	return nil
}

// snapshotDone waits until Kafka acknowledged every snapshot row, then
// lets the source drop its marker and stream.
func (s *session) snapshotDone(ctx context.Context) error {
	s.inSnap = false
	if err := s.opt.Delivery.Flush(ctx); err != nil {
		return fmt.Errorf("snapshot: waiting for Kafka to acknowledge %d rows: %w", s.snapRows, err)
	}
	if err := s.ck.Err(); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	err := s.st.SnapshotDone(ctx)
	if err == nil || errors.Is(err, capture.ErrEnd) {
		s.opt.Observer.SnapshotProgress(s.snapRows, true)
	}
	return err
}

// finish is the shutdown order of the design: reading has stopped; flush
// the producer; the stream sends the final status update and closes its
// connections. It runs on every exit, so a poison row still confirms
// everything before it.
func (s *session) finish(stop context.Context, cause error, stopRecording func(context.Context)) error {
	fctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := s.opt.Delivery.Flush(fctx); err != nil {
		s.log.Warn("stopping: Kafka did not acknowledge everything in time; unconfirmed events will be sent again on restart", "err", err, "confirmed", s.ck.Confirmed().String())
	}
	stopRecording(fctx) // the last position, after the flush confirmed what it could
	if err := s.opt.Delivery.Flush(fctx); err != nil {
		s.log.Warn("stopping: the confirmed position was not recorded", "err", err)
	}
	if err := s.ck.Err(); err != nil && (cause == nil || errors.Is(cause, context.Canceled)) {
		cause = err
	}
	if err := s.opt.Delivery.Err(); terminal.IsFinal(err) {
		// Fenced: the relay stops instead of competing for the slot
		// again, whatever else ended the session (a zombie's PostgreSQL
		// connections fail first).
		cause = err
	}
	abandoned := s.tx != nil
	if abandoned {
		s.tx.Abandon() // sent again, whole, after a restart
		s.tx = nil
	}
	orderly := stop.Err() != nil && (cause == nil || errors.Is(cause, context.Canceled))
	// Complete: exactly-once, the progress counts what Kafka has not
	// committed as in flight; a slot is dropped on stop only when nothing
	// is, because an open Kafka transaction is aborted at Close.
	end := capture.Ending{Orderly: orderly, Complete: !abandoned && s.progress.InFlight() == 0}
	// Its own time: a slow Kafka above must not cost the final status
	// update, or a restart sends again what Kafka has.
	cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer ccancel()
	if err := s.st.Close(cctx, end); err != nil && cause == nil {
		cause = err
	}
	return cause
}
