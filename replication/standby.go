package replication

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/outboxrelay/outboxrelay/postgres"
)

const (
	// standbySnapshotEvery is how often the primary is asked for a
	// running-xacts record while a slot is created on a standby.
	standbySnapshotEvery = 200 * time.Millisecond
	// standbyNudgeRetry is the pause before connecting to the primary
	// again after a failure.
	standbyNudgeRetry = 1500 * time.Millisecond
	// standbyNudgeWarnEvery is how often a failing primary is logged while
	// the creation waits.
	standbyNudgeWarnEvery = 30 * time.Second
)

// logStandbySnapshots calls pg_log_standby_snapshot() on the primary every
// standbySnapshotEvery until the returned function is called. A logical
// slot created on a hot standby is ready only once the standby replays a
// running-xacts record written after the creation began, and one in which
// no transaction that was open then is still open; an idle primary writes
// one only every 15 s at best (and not at all without other WAL). With the
// nudges creation usually finishes within a second, unless a transaction
// is open on the primary. The role needs EXECUTE on
// pg_log_standby_snapshot() (superusers have it). A failure (the primary
// down or unreachable, the privilege missing) does not stop the creation,
// which cannot finish while no running-xacts record comes: the primary is
// tried again every standbyNudgeRetry, and the failure logged every
// standbyNudgeWarnEvery.
func logStandbySnapshots(ctx context.Context, primary *postgres.Config, slot string, log *slog.Logger) (stop func()) {
	n := &standbyNudger{
		connect: func(ctx context.Context) (snapshotCaller, error) {
			conn, err := primary.Connect(ctx)
			if err != nil {
				return nil, err
			}
			return conn, nil
		},
		where: primary.Where(), slot: slot, log: log,
		every: standbySnapshotEvery, retry: standbyNudgeRetry, warnEvery: standbyNudgeWarnEvery,
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		n.run(ctx)
	}()
	return func() { cancel(); <-done }
}

// snapshotCaller is what the nudges need of a primary connection
// (*pgx.Conn).
type snapshotCaller interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Close(ctx context.Context) error
}

// standbyNudger is logStandbySnapshots' loop.
type standbyNudger struct {
	connect   func(context.Context) (snapshotCaller, error)
	where     string // the primary's host:port/dbname
	slot      string
	log       *slog.Logger
	every     time.Duration // between two calls
	retry     time.Duration // after a failure
	warnEvery time.Duration // between two WARNs of a failure that lasts
}

// run nudges until ctx ends: it keeps one connection while it works, and
// after a failure drops it and connects again retry later.
func (n *standbyNudger) run(ctx context.Context) {
	var conn snapshotCaller
	defer func() {
		if conn != nil {
			_ = conn.Close(context.Background())
		}
	}()
	var lastWarn time.Time
	failures := 0
	for {
		err := n.nudge(ctx, &conn)
		if ctx.Err() != nil {
			return
		}
		wait := n.every
		switch {
		case err != nil:
			failures++
			wait = n.retry
			if now := time.Now(); lastWarn.IsZero() || now.Sub(lastWarn) >= n.warnEvery {
				lastWarn = now
				n.warn(err, failures)
			}
		case failures > 0:
			n.log.Info("slot creation on the standby: database.primary.hostname answers again; pg_log_standby_snapshot() called",
				"slot", n.slot, "primary", n.where, "failures", failures)
			failures, lastWarn = 0, time.Time{}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// StandbyReplay is a hot standby's replay state and the slot's, as
// ReadReplay samples it. While replay is paused or behind, the relay's own
// lag (outboxrelay_replication_lag_*) stays 0: nothing reaches the slot to
// be late. This is what shows it.
type StandbyReplay struct {
	// InRecovery is pg_is_in_recovery(); false after a promotion, when
	// the lags are 0.
	InRecovery bool
	// LagBytes is pg_last_wal_receive_lsn() − pg_last_wal_replay_lsn():
	// WAL the standby received and has not replayed, so the slot cannot
	// decode it yet.
	LagBytes uint64
	// LagSeconds is now − pg_last_xact_replay_timestamp() while received
	// WAL waits for replay (LagBytes > 0), else 0: how old the last
	// replayed commit is, the age of what the slot can decode.
	LagSeconds float64
	// SlotInvalidated is the slot's Slot.Invalidated ("" when valid or
	// when the slot does not exist yet).
	SlotInvalidated string
}

// replaySQL samples StandbyReplay in one round trip. It names no
// relation: pg_get_replication_slots() reads the slots from shared memory,
// where the view pg_replication_slots would also join pg_database, whose
// AccessShareLock waits behind an AccessExclusiveLock the startup process
// replays (a VACUUM truncating pg_database) until its commit replays;
// with replay paused there, the sample on the lock's connection would time
// out and the failover lock look lost. The function's columns have the
// view's names (conflicting on 16, invalidation_reason on 17+), so
// slotInvalidatedSQL, shared with InspectSlot's view, reads both.
const replaySQL = `SELECT pg_is_in_recovery(),
	coalesce(greatest(pg_last_wal_receive_lsn() - pg_last_wal_replay_lsn(), 0), 0)::float8,
	CASE WHEN pg_last_wal_receive_lsn() > pg_last_wal_replay_lsn()
		THEN coalesce(greatest(extract(epoch FROM now() - pg_last_xact_replay_timestamp()), 0), 0) ELSE 0 END::float8,
	coalesce((SELECT ` + slotInvalidatedSQL + ` FROM pg_get_replication_slots() s WHERE slot_name = $1), '')`

// ReadReplay samples the standby's replay lag and the slot's invalidation
// on conn (any connection to the standby).
func ReadReplay(ctx context.Context, conn *pgx.Conn, slot string) (StandbyReplay, error) {
	var r StandbyReplay
	var bytes float64
	if err := conn.QueryRow(ctx, replaySQL, slot).Scan(&r.InRecovery, &bytes, &r.LagSeconds, &r.SlotInvalidated); err != nil {
		return r, fmt.Errorf("reading the standby's replay lag: %w", err)
	}
	if r.InRecovery {
		r.LagBytes = uint64(bytes)
	} else {
		r.LagSeconds = 0
	}
	return r, nil
}

// nudge calls pg_log_standby_snapshot() once, connecting first when
// *conn is nil; a connection that failed (not an error the server
// answered with) is closed and *conn cleared.
func (n *standbyNudger) nudge(ctx context.Context, conn *snapshotCaller) error {
	if *conn == nil {
		c, err := n.connect(ctx)
		if err != nil {
			return err
		}
		*conn = c
	}
	_, err := (*conn).Exec(ctx, `SELECT pg_log_standby_snapshot()`)
	var pgErr *pgconn.PgError
	if err != nil && !errors.As(err, &pgErr) { // the server did not answer: connect again
		_ = (*conn).Close(context.Background())
		*conn = nil
	}
	return err
}

// warn says why the creation waits: the primary cannot be reached, or
// it answers and refuses the call.
func (n *standbyNudger) warn(err error, failures int) {
	var pgErr *pgconn.PgError
	var connectErr *pgconn.ConnectError
	if errors.As(err, &pgErr) && !errors.As(err, &connectErr) {
		n.log.Warn("slot creation on the standby: SELECT pg_log_standby_snapshot() on database.primary.hostname failed; the slot is ready only after the primary writes a running-xacts record of its own (every 15 s at best, and only when it writes other WAL); run GRANT EXECUTE ON FUNCTION pg_log_standby_snapshot() TO the relay's role on the primary",
			"slot", n.slot, "primary", n.where, "err", err, "failures", failures)
		return
	}
	n.log.Warn("slot creation on the standby: waiting for WAL from the primary (a running-xacts record); it cannot finish while database.primary.hostname is unreachable or writes no WAL; retrying",
		"slot", n.slot, "primary", n.where, "err", err, "failures", failures, "retry_every", n.retry.String())
}

const (
	// standbyHeartbeatTimeout bounds a heartbeat's work on a hot standby
	// session: pg_is_in_recovery() on the stream's server, then connecting
	// to the primary and running heartbeat.action.query there. A status
	// update is sent just before, so the walsender hears from the relay
	// at least this often, well under wal_sender_timeout/2 (60 s/2 by
	// default).
	standbyHeartbeatTimeout = 10 * time.Second
	// standbyHeartbeatHoldOff: after a heartbeat on the primary timed out
	// (a host that drops packets), the query is not tried on it again
	// before this much time, so that the stream is held at most a sixth
	// of the time; a primary that refuses or fails fast is tried at every
	// heartbeat.
	standbyHeartbeatHoldOff = time.Minute
	// standbyHeartbeatWarnEvery is how often a lasting failure of the
	// primary is logged.
	standbyHeartbeatWarnEvery = time.Minute
)

// primaryHealth is how heartbeats on database.primary.hostname have gone
// lately.
type primaryHealth struct {
	failures int       // in a row
	lastWarn time.Time // zero: none logged since the last success
	holdOff  time.Time // no try before
}

// stillStandby asks the stream's own server whether it is still in
// recovery. A logical walsender outlives a promotion, so the session
// does: once promoted, heartbeat.action.query runs on the stream's
// server (which now writes the WAL the slot reads), never again on the
// old primary, which may be gone or, in a split brain, a diverged
// database whose WAL never reaches the slot.
func (s *stream) stillStandby(ctx context.Context) (bool, error) {
	qctx, cancel := context.WithTimeout(ctx, standbyHeartbeatTimeout)
	defer cancel()
	var standby bool
	if err := s.conn.QueryRow(qctx, `SELECT pg_is_in_recovery()`).Scan(&standby); err != nil {
		return false, fmt.Errorf("heartbeat: SELECT pg_is_in_recovery() on database.hostname: %w", err)
	}
	if !standby {
		s.srv.InRecovery = false
		s.closePrimary()
		s.src.opt.Log.Info("database.hostname was promoted: heartbeat.action.query now runs there, no longer on database.primary.hostname",
			"host", s.cfg.Where(), "primary", s.cfg.Primary().Where())
	}
	return standby, nil
}

// standbyHeartbeat runs heartbeat.action.query on database.primary.hostname
// for a session on a hot standby. Decoding does not need the primary:
// when it cannot be reached, refuses the connection or fails, the
// heartbeat is logged (a WARN at the first failure, then every
// standbyHeartbeatWarnEvery), its connection closed (it is opened again at
// the next heartbeat) and the session goes on; the heartbeat record is
// still emitted. Only a query the primary rejects as written
// (heartbeatQueryWrong) ends the relay, as it does on a primary.
func (s *stream) standbyHeartbeat(ctx context.Context, now time.Time) error {
	if now.Before(s.pri.holdOff) {
		return nil
	}
	if err := s.maybeStatus(ctx, now, true); err != nil {
		return err
	}
	hctx, cancel := context.WithTimeout(ctx, standbyHeartbeatTimeout)
	defer cancel()
	err := s.onPrimary(hctx)
	log, primary := s.src.opt.Log, s.cfg.Primary().Where()
	if err == nil {
		if s.pri.failures > 0 {
			log.Info("heartbeat.action.query runs on database.primary.hostname again", "primary", primary, "failures", s.pri.failures)
		}
		s.pri = primaryHealth{}
		return nil
	}
	s.closePrimary()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if heartbeatQueryWrong(err) {
		return fmt.Errorf("running heartbeat.action.query on database.primary.hostname %s: %w", primary, err)
	}
	s.pri.failures++
	holdOff := time.Duration(0)
	if hctx.Err() != nil {
		holdOff = standbyHeartbeatHoldOff
		s.pri.holdOff = now.Add(holdOff)
	}
	if s.pri.lastWarn.IsZero() || now.Sub(s.pri.lastWarn) >= standbyHeartbeatWarnEvery {
		s.pri.lastWarn = now
		log.Warn("heartbeat: heartbeat.action.query failed on database.primary.hostname; decoding on the standby goes on and heartbeat records are still sent, but a quiet database's slot may not advance until the primary takes the query again",
			"primary", primary, "err", err, "failures", s.pri.failures, "next_try_in", max(holdOff, s.cfg.HeartbeatInterval).String())
	}
	return nil
}

// onPrimary connects to database.primary.hostname if need be and runs
// heartbeat.action.query there. The connection is ConnectPrimary's, as
// the preflight's: within connect_timeout (and ctx, standbyHeartbeatTimeout),
// and only to a primary of the standby's cluster that is out of recovery
// (VerifyPrimary, on the stream's ordinary connection), so that a primary
// unreachable at preflight is checked before the query is sent to
// whatever answers later.
func (s *stream) onPrimary(ctx context.Context) error {
	if s.primary == nil {
		conn, err := s.cfg.ConnectPrimary(ctx, s.conn)
		if err != nil {
			return &primaryUnusable{err: fmt.Errorf("connecting: %w", err)}
		}
		s.primary = conn
	}
	if _, err := s.primary.Exec(ctx, s.cfg.HeartbeatQuery); err != nil {
		return fmt.Errorf("running heartbeat.action.query: %w", err)
	}
	return nil
}

// closePrimary closes database.primary.hostname's connection, if open.
func (s *stream) closePrimary() {
	if s.primary == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = s.primary.Close(ctx)
	s.primary = nil
}

// heartbeatQueryWrong: the primary answered heartbeat.action.query with a
// syntax or access rule error (SQLSTATE class 42): the query or the
// role's privileges are wrong, which no retry mends; it ends the relay as
// the same error does on a primary. A failure to connect (refused,
// timed out, bad credentials, a server that is not read-write) and every
// other error of a connected primary is not (see standbyHeartbeat).
func heartbeatQueryWrong(err error) bool {
	var connectErr *pgconn.ConnectError
	var unusable *primaryUnusable
	var pgErr *pgconn.PgError
	return !errors.As(err, &connectErr) && !errors.As(err, &unusable) && errors.As(err, &pgErr) && strings.HasPrefix(pgErr.Code, "42")
}

// primaryUnusable is onPrimary's error before the query ran: the
// connection or VerifyPrimary failed (unreachable, another cluster, in
// recovery, pg_control_system() refused). A WARN, never the end of the
// relay: decoding does not need the primary.
type primaryUnusable struct{ err error }

func (e *primaryUnusable) Error() string { return e.err.Error() }
func (e *primaryUnusable) Unwrap() error { return e.err }
