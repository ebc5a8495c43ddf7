package replication

import (
	"context"
	"errors"
	"log/slog"
	"time"

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
