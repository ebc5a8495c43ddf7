package poll

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/outboxrelay/outboxrelay/replication"
)

// Janitor is poll mode's clean-up (outbox.retention.ms): it deletes rows
// marked dispatched longer ago than the retention, in batches. A row is
// marked only after Kafka acknowledged it, so no slot needs asking: the
// dispatched column is the proof.
type Janitor struct {
	Cfg  replication.JanitorConfig
	Poll Config
	PG   *replication.Config
	Log  *slog.Logger
	// Active says whether this replica holds buckets: only those clean up.
	Active func() bool
	// Deleted, when set, is told how many rows each batch deleted.
	Deleted func(n int64)
}

// Run cleans up every interval (half the retention, between 1 s and 1 min)
// until ctx ends; a failed round is logged and tried again next round.
func (j *Janitor) Run(ctx context.Context) {
	every := j.Cfg.Interval()
	j.Log.Info("janitor: deleting dispatched outbox rows older than the retention (poll mode)",
		"retention", j.Cfg.Retention.String(), "column", j.Poll.Dispatched, "batch", j.Cfg.Batch, "every", every.String())
	replication.RunRounds(ctx, every, j.Active, j.Round, j.Log)
}

// Round deletes old dispatched rows from every outbox table, batch by
// batch, and returns how many.
func (j *Janitor) Round(ctx context.Context) (int64, error) {
	conn, err := j.PG.Connect(ctx)
	if err != nil {
		return 0, fmt.Errorf("janitor: %w", err)
	}
	defer conn.Close(context.Background())
	tables, err := replication.IncludedTables(ctx, conn, j.PG)
	if err != nil {
		return 0, fmt.Errorf("janitor: %w", err)
	}
	var total int64
	for _, table := range tables {
		for {
			n, err := j.batch(ctx, conn, table)
			total += n
			if j.Deleted != nil {
				j.Deleted(n)
			}
			if err != nil || n < int64(j.Cfg.Batch) {
				if err != nil {
					return total, err
				}
				break
			}
			select {
			case <-ctx.Done():
				return total, ctx.Err()
			case <-time.After(j.Cfg.Pause):
			}
		}
	}
	return total, nil
}

// batch deletes one batch: a TID scan of rows picked by a LIMITed
// subquery, the age test repeated outside (a ctid is unique only within one
// partition of a partitioned table).
func (j *Janitor) batch(ctx context.Context, conn *pgx.Conn, table string) (int64, error) {
	qt := replication.QuoteTables([]string{table})[0]
	col := replication.QuoteIdent(j.Poll.Dispatched)
	old := fmt.Sprintf(`%s < now() - $1::bigint * interval '1 millisecond'`, col)
	stmt := fmt.Sprintf(`DELETE FROM %s WHERE ctid = ANY(ARRAY(SELECT ctid FROM %s WHERE %s LIMIT $2)) AND %s`, qt, qt, old, old)
	tag, err := conn.Exec(ctx, stmt, j.Cfg.Retention.Milliseconds(), j.Cfg.Batch)
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "42501" {
			return 0, fmt.Errorf("janitor: %s: %w; run GRANT DELETE ON %s TO %s; or unset %s", table, err, qt, replication.QuoteIdent(j.PG.User), replication.KeyRetention)
		}
		return 0, fmt.Errorf("janitor: deleting from %s: %w", table, err)
	}
	return tag.RowsAffected(), nil
}
