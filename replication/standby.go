package replication

import (
	"context"
	"fmt"
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

// replaySQL samples StandbyReplay in one round trip, with no lock and no
// snapshot of a table (pg_replication_slots reads shared memory), so the
// standby's replay never waits for it.
const replaySQL = `SELECT pg_is_in_recovery(),
	coalesce(greatest(pg_last_wal_receive_lsn() - pg_last_wal_replay_lsn(), 0), 0)::float8,
	CASE WHEN pg_last_wal_receive_lsn() > pg_last_wal_replay_lsn()
		THEN coalesce(greatest(extract(epoch FROM now() - pg_last_xact_replay_timestamp()), 0), 0) ELSE 0 END::float8,
	coalesce((SELECT ` + slotInvalidatedSQL + ` FROM pg_replication_slots s WHERE slot_name = $1), '')`

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
