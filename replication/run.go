package replication

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/outboxrelay/outboxrelay/router"
)

// Run streams until ctx is cancelled (an orderly stop: returns nil after
// flushing Kafka and confirming what it acknowledged), or a permanent error
// (a poison row, a bad config, a missing publication). Lost connections are
// retried forever with capped backoff, resuming from the confirmed LSN.
func Run(ctx context.Context, opt Options) error {
	if opt.Config == nil || opt.Router == nil || opt.Sink == nil || opt.Log == nil {
		return errors.New("replication.Run: Config, Router, Sink and Log are required")
	}
	if opt.MaxInFlightRecords <= 0 {
		opt.MaxInFlightRecords = 10000
	}
	if opt.MaxInFlightBytes <= 0 {
		opt.MaxInFlightBytes = 64 << 20
	}
	if opt.ConfirmEvery <= 0 {
		opt.ConfirmEvery = 100 * time.Millisecond
	}
	budget, err := NewBudget(opt.MaxInFlightRecords, opt.MaxInFlightBytes)
	if err != nil {
		return fmt.Errorf("replication.Run: %w", err)
	}
	// confirmed carries what earlier sessions confirmed into the next, in
	// case the last status update never reached the server.
	var confirmed pglogrepl.LSN
	var slotBusySince time.Time
	var failingSince time.Time
	backoff := 500 * time.Millisecond
	for attempt := 1; ; attempt++ {
		started := time.Now()
		err := runSession(ctx, &opt, budget, &confirmed)
		if ctx.Err() != nil || errors.Is(err, errStop) {
			return nil
		}
		// The slot may still look active for a moment after our own
		// previous connection (or process) died: the server notices a dead
		// walsender client quickly but not at once. Wait up to 30 s for it
		// before calling the slot taken by someone else.
		busy := errors.Is(err, ErrSlotInUse)
		if busy && slotBusySince.IsZero() {
			slotBusySince = time.Now()
		}
		if !busy {
			slotBusySince = time.Time{}
		}
		if busy && time.Since(slotBusySince) < 30*time.Second {
			opt.Log.Info("replication: slot still active, waiting for it to be released", "err", err)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(time.Second):
			}
			continue
		}
		if !Retryable(err) {
			state(&opt, "stopped")
			return err
		}
		// A session that streamed for a while was healthy: start over.
		if time.Since(started) > time.Minute {
			failingSince, backoff, attempt = time.Time{}, 500*time.Millisecond, 1
		}
		if failingSince.IsZero() {
			failingSince = started
		}
		state(&opt, "retrying")
		opt.Log.Warn("replication: connection lost, reconnecting",
			"err", err, "attempt", attempt, "failing_since", failingSince.Format(time.RFC3339), "backoff", backoff.String(),
			"resume_from", confirmed.String())
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 30*time.Second)
	}
}

func state(opt *Options, s string) {
	if opt.Observer != nil {
		opt.Observer.State(s)
	}
}

// runSession connects, checks, prepares the slot (and snapshot), streams,
// and on any exit flushes Kafka and sends a last status update.
func runSession(ctx context.Context, opt *Options, budget *Budget, confirmed *pglogrepl.LSN) (err error) {
	cfg := opt.Config
	log := opt.Log
	conn, repl, err := connect(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	defer repl.Close(context.Background())

	srv, err := Preflight(ctx, conn, cfg, log)
	if err != nil {
		return err
	}
	s := &session{
		opt: opt, cfg: cfg, log: log, conn: repl, pg: conn, budget: budget,
		rels:     NewRelations(),
		nullable: map[uint32][]bool{},
	}

	start := srv.Slot.ConfirmedFlush
	snapshot := false
	if !srv.Slot.Exists {
		wantSnapshot := cfg.SnapshotMode != SnapshotNoData
		created, err := createSlot(ctx, repl, cfg.Slot, wantSnapshot, log)
		if err != nil {
			return err
		}
		start = created.ConsistentPoint
		if wantSnapshot {
			s.ck = NewCheckpoint(start)
			if err := s.snapshot(ctx, conn, created.SnapshotName, srv.Tables); err != nil {
				return err
			}
			snapshot = true
		}
	}
	if snapshot && cfg.SnapshotMode == SnapshotInitialOnly {
		log.Info("snapshot.mode=initial_only: snapshot done, stopping")
		if err := opt.Sink.Flush(ctx); err != nil {
			return fmt.Errorf("flushing snapshot records: %w", err)
		}
		return errStop
	}
	// Resume from what this process already confirmed if the server lags
	// behind it (the last status update may not have reached it).
	if *confirmed > start {
		start = *confirmed
	}
	s.ck = NewCheckpoint(start)
	defer func() {
		if c := s.ck.Confirmed(); c > *confirmed {
			*confirmed = c
		}
	}()

	if err := startReplication(ctx, repl, cfg, srv.VersionNum, start); err != nil {
		return err
	}
	state(opt, "streaming")
	log.Info("streaming", "slot", cfg.Slot, "publication", cfg.Publication, "from", start.String(), "tables", srv.Tables)

	s.streaming = true
	s.lastStatus = time.Now()
	s.lastConfirmed = start
	err = s.loop(ctx)
	return s.finish(err)
}

// finish is the shutdown order of the design: reading has stopped; flush
// the producer; send the final status update; the deferred Close ends the
// connection. It runs on every exit, so a poison row still confirms
// everything before it.
func (s *session) finish(cause error) error {
	fctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := s.opt.Sink.Flush(fctx); err != nil {
		s.log.Warn("stopping: Kafka did not acknowledge everything in time; unconfirmed events will be sent again on restart", "err", err, "confirmed", s.ck.Confirmed().String())
	}
	if err := s.ck.Err(); err != nil && (cause == nil || errors.Is(cause, context.Canceled)) {
		cause = err
	}
	if s.tx != nil {
		s.tx.Abandon() // sent again, whole, after a restart
		s.tx = nil
	}
	if err := s.maybeStatus(fctx, true); err != nil && cause == nil {
		cause = err
	}
	s.log.Info("stream stopped", "confirmed", s.ck.Confirmed().String())
	return cause
}

// snapshot emits the rows of an exported snapshot as snapshot reads and
// waits until Kafka acknowledged all of them, before streaming starts.
//
// The rows form one pseudo-transaction at the slot's consistent point, so
// the in-flight budget and acknowledgements work as for streamed rows.
func (s *session) snapshot(ctx context.Context, conn *pgx.Conn, name string, tables []string) error {
	at := s.ck.Confirmed()
	tx, err := s.ck.Begin(at)
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	s.tx = tx
	state(s.opt, "snapshot")
	started := time.Now()
	n, err := readSnapshot(ctx, conn, name, tables, func(ev *router.Event) error {
		ev.CommitLSN = uint64(at)
		ev.Position++
		return s.route(ctx, ev)
	}, s.log)
	if err != nil {
		return err
	}
	if err := tx.Commit(at, at); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	s.tx = nil
	if err := s.opt.Sink.Flush(ctx); err != nil {
		return fmt.Errorf("snapshot: waiting for Kafka to acknowledge %d rows: %w", n, err)
	}
	if err := s.ck.Err(); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	s.log.Info("snapshot: done", "rows", n, "took", time.Since(started).Round(time.Millisecond).String())
	return nil
}

// Retryable decides, in one place, whether an error ends the relay or only
// this connection: network failures and server shutdowns are retried;
// configuration, permission and data errors are not.
func Retryable(err error) bool {
	if err == nil {
		return false
	}
	var rowErr *router.RowError
	if errors.As(err, &rowErr) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code[:2] {
		case "08", "57", "53", "58": // connection, operator intervention, resources, system
			return pgErr.Code != "57P04" // database dropped
		}
		return pgErr.Code == "55006" // object in use: our own old walsender still exits
	}
	var netErr net.Error
	if errors.As(err, &netErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return true
	}
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) {
		// A refused or reset connection is retried; bad credentials are not.
		var inner *pgconn.PgError
		return !errors.As(connectErr, &inner)
	}
	return pgconn.SafeToRetry(err)
}
