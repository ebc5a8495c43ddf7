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
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/outboxrelay/outboxrelay/internal/certerr"
	"github.com/outboxrelay/outboxrelay/router"
)

// Run streams until ctx is cancelled (an orderly stop: returns nil after
// flushing Kafka and confirming what it acknowledged), or a permanent error
// (a poison row, a bad config, a missing publication). Lost connections are
// retried forever with capped backoff, resuming from the confirmed LSN.
//
// Active/passive failover: Run streams only while it holds a PostgreSQL
// session advisory lock derived from the slot name, on a connection of its
// own (see acquireLock). A second instance with the same config waits as
// standby and takes over, from the slot's confirmed LSN, within about
// StandbyPoll once the first one's lock connection is gone.
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
	if opt.StandbyPoll <= 0 {
		opt.StandbyPoll = time.Second
	}
	defer state(&opt, StateStopped)
	budget, err := NewBudget(opt.MaxInFlightRecords, opt.MaxInFlightBytes)
	if err != nil {
		return fmt.Errorf("replication.Run: %w", err)
	}
	// confirmed carries what earlier sessions confirmed into the next, in
	// case the last status update never reached the server.
	var confirmed pglogrepl.LSN
	slotBusy := 0 // consecutive sessions that found the slot active
	var failingSince time.Time
	backoff := 500 * time.Millisecond
	// lock is the failover lock's connection, kept across sessions while it
	// stays healthy so that a transient error does not hand over for nothing.
	var lock *pgx.Conn
	defer func() {
		if lock != nil {
			lock.Close(context.Background())
		}
	}()
	for attempt := 1; ; attempt++ {
		started := time.Now()
		from := confirmed
		streamed := false
		var err error
		if lock == nil {
			lock, err = acquireLock(ctx, &opt)
		}
		if err == nil {
			err = runLocked(ctx, &opt, budget, &confirmed, lock, &streamed)
		}
		if ctx.Err() != nil || errors.Is(err, errStop) {
			return nil
		}
		if lock != nil && (errors.Is(err, ErrLockLost) || !Retryable(err)) {
			lock.Close(context.Background())
			lock = nil
		}
		// The slot may still look active for a moment after our own
		// previous connection (or process) died: the server notices a dead
		// walsender client quickly but not at once. Retry as Debezium does
		// (slot.max.retries × slot.retry.delay.ms) before calling the slot
		// taken by someone else.
		if errors.Is(err, ErrSlotInUse) {
			slotBusy++
		} else {
			slotBusy = 0
		}
		if slotBusy > 0 && slotBusy <= opt.Config.SlotMaxRetries {
			opt.Log.Info("replication: slot still active, waiting for it to be released",
				"err", err, "retry", slotBusy, "of", opt.Config.SlotMaxRetries, "delay", opt.Config.SlotRetryDelay.String())
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(opt.Config.SlotRetryDelay):
			}
			continue
		}
		if !Retryable(err) {
			return err
		}
		if max := opt.Config.MaxRetries; max >= 0 && attempt > max {
			return fmt.Errorf("giving up after %d retries (errors.max.retries): %w", max, err)
		}
		// A session that streamed and confirmed progress was healthy: this
		// failure starts a new outage, with a short first wait. A session
		// that never got that far keeps backing off.
		if streamed && confirmed > from {
			failingSince, backoff, attempt = time.Time{}, 500*time.Millisecond, 1
		}
		if failingSince.IsZero() {
			failingSince = started
		}
		state(&opt, StateRetrying)
		opt.Log.Warn("replication: session failed, retrying",
			"err", err, "attempt", attempt, "failing_since", failingSince.Format(time.RFC3339), "backoff", backoff.String(),
			"resume_from", confirmed.String())
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, opt.Config.RetryWait)
	}
}

func state(opt *Options, s string) {
	if opt.Observer != nil {
		opt.Observer.State(s)
	}
}

// ErrLockLost reports that the failover lock's connection failed while
// streaming: another instance may take over, so this one stops streaming at
// once and competes for the lock again. Retryable.
var ErrLockLost = errors.New("failover lock lost")

// lockSQL takes the failover lock without waiting. The key is derived from
// the slot name because the slot is what two relays must not share; the
// prefix keeps it apart from an application's own advisory locks.
const lockSQL = `SELECT pg_try_advisory_lock(hashtext('outboxrelay:' || $1))`

// acquireLock returns an ordinary connection holding the failover lock,
// polling every StandbyPoll while another instance holds it. The lock is a
// session lock: it lasts exactly as long as the connection, so a relay that
// dies, or loses its connection, releases it without anyone's help.
func acquireLock(ctx context.Context, opt *Options) (*pgx.Conn, error) {
	cfg := opt.Config
	conn, err := cfg.Connect(ctx)
	if err != nil {
		return nil, err
	}
	standby := false
	for {
		var held bool
		if err := conn.QueryRow(ctx, lockSQL, cfg.Slot).Scan(&held); err != nil {
			conn.Close(context.Background())
			return nil, fmt.Errorf("failover lock: %s for slot %q: %w", lockSQL, cfg.Slot, err)
		}
		if held {
			if standby {
				opt.Log.Info("failover lock acquired: taking over", "slot", cfg.Slot)
			}
			return conn, nil
		}
		if !standby {
			standby = true
			state(opt, StateStandby)
			opt.Log.Info("standby: another instance holds the failover lock; polling", "slot", cfg.Slot, "every", opt.StandbyPoll.String())
		}
		select {
		case <-ctx.Done():
			conn.Close(context.Background())
			return nil, ctx.Err()
		case <-time.After(opt.StandbyPoll):
		}
	}
}

// runLocked runs one session while a watcher checks the lock's connection
// every StandbyPoll; when that connection fails the session is cancelled
// (it still flushes and confirms what Kafka acknowledged) and the error is
// ErrLockLost. The watcher is the only user of lock while the session runs.
func runLocked(ctx context.Context, opt *Options, budget *Budget, confirmed *pglogrepl.LSN, lock *pgx.Conn, streamed *bool) error {
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done := make(chan struct{})
	watching := make(chan struct{})
	go func() {
		defer close(watching)
		t := time.NewTicker(opt.StandbyPoll)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-sctx.Done():
				return
			case <-t.C:
			}
			pctx, pcancel := context.WithTimeout(sctx, 5*time.Second)
			err := lock.Ping(pctx)
			pcancel()
			if err != nil && sctx.Err() == nil {
				cancel(fmt.Errorf("%w: its connection failed: %w", ErrLockLost, err))
				return
			}
		}
	}()
	err := runSession(sctx, opt, budget, confirmed, streamed)
	close(done)
	<-watching
	if cause := context.Cause(sctx); ctx.Err() == nil && errors.Is(cause, ErrLockLost) {
		return cause
	}
	return err
}

// runSession connects, checks, prepares the slot (and snapshot), streams,
// and on any exit flushes Kafka and sends a last status update.
func runSession(ctx context.Context, opt *Options, budget *Budget, confirmed *pglogrepl.LSN, streamed *bool) (err error) {
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
	state(opt, StateConnected)
	log.Info("connected", "server_version_num", srv.VersionNum, "slot", cfg.Slot, "slot_exists", srv.Slot.Exists, "slot_confirmed_flush", srv.Slot.ConfirmedFlush.String())
	s := &session{
		opt: opt, cfg: cfg, log: log, conn: repl, pg: conn, budget: budget,
		rels:    NewRelations(),
		catalog: map[uint32]relCatalog{},
	}

	start := srv.Slot.ConfirmedFlush
	wantSnapshot := cfg.SnapshotMode != SnapshotNoData
	pending, err := snapshotPending(ctx, conn, cfg.Slot)
	if err != nil {
		return err
	}
	snapshot := false
	switch {
	case !srv.Slot.Exists:
		if pending && !wantSnapshot {
			// Left by an initial snapshot whose slot was never made;
			// no_data will not redo it, and a later initial must not.
			if err := markSnapshotDone(ctx, conn, cfg.Slot); err != nil {
				return err
			}
		}
		if *confirmed != 0 {
			// The slot was dropped while this process streamed from it.
			// What this process confirmed belongs to the old slot: the
			// new one starts at its own consistent point, never later.
			log.Warn("the replication slot was gone and is created again: transactions committed between the last confirmed LSN and the new slot's consistent point are not streamed",
				"slot", cfg.Slot, "last_confirmed", confirmed.String())
			*confirmed = 0
		}
		if wantSnapshot {
			// Before the slot: a crash between the two must not leave a
			// slot whose snapshot looks done.
			if err := markSnapshotPending(ctx, conn, cfg.Slot); err != nil {
				return err
			}
		}
		created, err := createSlot(ctx, repl, cfg.Slot, wantSnapshot, log)
		if err != nil {
			return err
		}
		start = created.ConsistentPoint
		if wantSnapshot {
			if err := s.snapshot(ctx, conn, start, created.SnapshotName, srv.Tables); err != nil {
				return err
			}
			snapshot = true
		}
	case pending && wantSnapshot:
		// The slot has not streamed yet (streaming starts only after the
		// marker is dropped), so its position is still its consistent
		// point. The exported snapshot is gone: a new one sees every row
		// still in the table, and the stream from the slot's position
		// brings the rows committed since, some a second time.
		log.Warn("snapshot: the initial snapshot of this slot did not finish (the relay stopped before Kafka acknowledged all of it); reading the outbox tables again, then streaming from the slot's position: rows committed since the slot was created may be sent twice",
			"slot", cfg.Slot, "marker", SnapshotMarker(cfg.Slot), "from", start.String())
		if err := s.snapshot(ctx, conn, start, "", srv.Tables); err != nil {
			return err
		}
		snapshot = true
	case pending:
		log.Warn("snapshot: the initial snapshot of this slot did not finish, and snapshot.mode=no_data does not redo it; dropping its marker",
			"slot", cfg.Slot, "marker", SnapshotMarker(cfg.Slot))
		if err := markSnapshotDone(ctx, conn, cfg.Slot); err != nil {
			return err
		}
	}
	if cfg.SnapshotMode == SnapshotInitialOnly {
		if !snapshot {
			log.Info("snapshot.mode=initial_only: the slot's snapshot was done before; nothing to stream, stopping", "slot", cfg.Slot)
			return errStop
		}
		log.Info("snapshot.mode=initial_only: snapshot done, stopping; the slot stays at its consistent point and keeps WAL until a relay streams from it or it is dropped",
			"slot", cfg.Slot, "drop", fmt.Sprintf("SELECT pg_drop_replication_slot('%s');", cfg.Slot))
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
	state(opt, StateStreaming)
	log.Info("streaming", "slot", cfg.Slot, "publication", cfg.Publication, "from", start.String(), "tables", srv.Tables)

	s.streaming = true
	*streamed = true
	s.lastStatus = time.Now()
	s.lastConfirmed = start
	err = s.loop(ctx)
	err = s.finish(err)
	if cfg.DropSlotOnStop && errors.Is(context.Cause(ctx), context.Canceled) && (err == nil || errors.Is(err, context.Canceled)) {
		s.dropOnStop()
	}
	return err
}

// dropOnStop drops the slot after an orderly stop (slot.drop.on.stop), on
// the replication connection, which finish has taken out of streaming.
func (s *session) dropOnStop() {
	if n := s.ck.InFlight(); n > 0 || s.abandoned {
		s.log.Warn("stopping: the slot is kept although slot.drop.on.stop is set: Kafka did not acknowledge every record, or a transaction was left half read, and the rest would be lost with it", "in_flight", n)
		return
	}
	dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := dropSlot(dctx, s.conn, s.cfg.Slot); err != nil {
		s.log.Warn("stopping: the slot was not dropped; drop it by hand if it is no longer needed", "err", err,
			"sql", fmt.Sprintf("SELECT pg_drop_replication_slot('%s');", s.cfg.Slot))
		return
	}
	s.log.Info("replication slot dropped (slot.drop.on.stop)", "slot", s.cfg.Slot)
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
		s.abandoned = true
	}
	if err := s.maybeStatus(fctx, true); err != nil && cause == nil {
		cause = err
	}
	if s.streaming {
		// Closing the socket now could kill the walsender in the middle of
		// a write, before it reads the status update just sent: the slot
		// would keep its older position and a restart would send again
		// what Kafka already has. Ending the COPY makes the server read
		// everything we sent first.
		if err := endCopy(fctx, s.conn); err != nil {
			s.log.Debug("stopping: ending the replication stream", "err", err)
		}
	}
	s.log.Info("stream stopped", "confirmed", s.ck.Confirmed().String())
	return cause
}

// endCopy sends CopyDone and reads, discarding the WAL still in flight,
// until the server has ended the stream too (ReadyForQuery), ctx ends, or
// the connection fails. The server handles our messages in order, so the
// status update sent before CopyDone has been applied to the slot when it
// answers.
func endCopy(ctx context.Context, conn *pgconn.PgConn) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn.Frontend().Send(&pgproto3.CopyDone{})
	if err := conn.Frontend().Flush(); err != nil {
		return fmt.Errorf("sending CopyDone: %w", err)
	}
	for {
		msg, err := conn.ReceiveMessage(ctx)
		if err != nil {
			return fmt.Errorf("waiting for the end of the stream: %w", err)
		}
		switch m := msg.(type) {
		case *pgproto3.ReadyForQuery:
			return nil
		case *pgproto3.ErrorResponse:
			return fmt.Errorf("ending the stream: %w", pgconn.ErrorResponseToPgError(m))
		}
	}
}

// snapshot emits the rows of the outbox tables as snapshot reads and waits
// until Kafka acknowledged all of them, then drops the pending marker,
// before streaming starts. name is the slot's exported snapshot, or "" for
// a new snapshot when the first one did not finish.
//
// The rows form one pseudo-transaction at the slot's consistent point, so
// the in-flight budget and acknowledgements work as for streamed rows.
func (s *session) snapshot(ctx context.Context, conn *pgx.Conn, at pglogrepl.LSN, name string, tables []string) error {
	s.ck = NewCheckpoint(at)
	tx, err := s.ck.Begin(at)
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	s.tx = tx
	state(s.opt, StateSnapshot)
	started := time.Now()
	var rows int64
	n, err := readSnapshot(ctx, conn, name, tables, func(ev *router.Event) error {
		ev.CommitLSN = uint64(at)
		ev.Position++
		if rows++; rows%1000 == 0 && s.opt.Observer != nil {
			s.opt.Observer.SnapshotProgress(rows, false)
		}
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
	if err := markSnapshotDone(ctx, conn, s.cfg.Slot); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	if s.opt.Observer != nil {
		s.opt.Observer.SnapshotProgress(int64(n), true)
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
	if errors.Is(err, ErrLockLost) {
		return true
	}
	var rowErr *router.RowError
	if errors.As(err, &rowErr) {
		return false
	}
	// A record the sink gave up on is final: the sink already retries
	// transient Kafka errors forever. Checked before net.Error, because
	// kafka-go's error codes implement Timeout and Temporary.
	if errors.Is(err, ErrRecordFailed) || errors.Is(err, ErrConnSettings) {
		return false
	}
	// A certificate that does not verify will not verify on the next try.
	if certerr.Failed(err) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code[:2] {
		case "08", "57", "53", "58": // connection, operator intervention, resources, system
			// Not a dropped database, nor every replication slot in use
			// (53400): a person must act.
			return pgErr.Code != "57P04" && pgErr.Code != "53400"
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
