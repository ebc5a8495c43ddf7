package replication

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxrelay/outboxrelay/postgres"
)

// standbySnapshotEvery is how often the primary is asked for a
// running-xacts record while a slot is created on a standby.
const standbySnapshotEvery = 200 * time.Millisecond

// logStandbySnapshots calls pg_log_standby_snapshot() on the primary every
// standbySnapshotEvery until the returned function is called. A logical
// slot created on a hot standby is ready only once the standby replays a
// running-xacts record written after the creation began; an idle primary
// writes one only every 15 s at best (and not at all without other WAL),
// so creation waits from seconds to minutes without it. Failures are
// logged once and do not stop the creation, which then only takes longer:
// the role needs EXECUTE on pg_log_standby_snapshot() (superusers have it).
func logStandbySnapshots(ctx context.Context, primary *postgres.Config, log *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		conn, err := primary.Connect(ctx)
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("slot creation on the standby: cannot connect to database.primary.hostname to call pg_log_standby_snapshot(); the slot is ready only after the primary's next running-xacts record (seconds to minutes)", "primary", primary.Where(), "err", err)
			}
			return
		}
		defer conn.Close(context.Background())
		nudgeStandby(ctx, conn, log)
	}()
	return func() { cancel(); <-done }
}

// nudgeStandby is logStandbySnapshots' loop on its primary connection.
func nudgeStandby(ctx context.Context, conn *pgx.Conn, log *slog.Logger) {
	tick := time.NewTicker(standbySnapshotEvery)
	defer tick.Stop()
	for {
		if _, err := conn.Exec(ctx, `SELECT pg_log_standby_snapshot()`); err != nil {
			if ctx.Err() == nil {
				log.Warn("slot creation on the standby: SELECT pg_log_standby_snapshot() on the primary failed; the slot is ready only after the primary's next running-xacts record (seconds to minutes); run GRANT EXECUTE ON FUNCTION pg_log_standby_snapshot() TO the relay's role on the primary", "err", err)
			}
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
