package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/outboxrelay/outboxrelay/internal/confkey"
)

// Keys of the outbox clean-up janitor (in the connector file's config).
const (
	KeyRetention       = "outbox.retention.ms"
	KeyRetentionColumn = "outbox.retention.column"
)

// JanitorConfig is the clean-up janitor's configuration. Retention 0 (the
// default) turns it off.
type JanitorConfig struct {
	Retention time.Duration // outbox.retention.ms
	Column    string        // outbox.retention.column, default created_at
	Batch     int           // rows per DELETE statement
	Pause     time.Duration // between two batches
	// ConfirmWait bounds the wait for the slot to confirm past a batch's
	// snapshot (logical replication); a batch that waits longer is left
	// for the next round.
	ConfirmWait time.Duration
}

// ParseJanitorConfig reads the janitor's keys (outbox.retention.ms,
// outbox.retention.column) with their defaults.
func ParseJanitorConfig(relay map[string]string) (JanitorConfig, error) {
	r := confkey.Collect(relay)
	c := JanitorConfig{
		Retention: r.Millis(KeyRetention),
		Column:    r.Text(KeyRetentionColumn),
		Batch:     1000, Pause: 100 * time.Millisecond, ConfirmWait: 30 * time.Second,
	}
	return c, r.Err()
}

// Interval is the pause between two clean-up rounds: half the retention,
// between 1 s and 1 min, so rows live at most about 1.5 × the retention.
func (c JanitorConfig) Interval() time.Duration {
	return min(max(c.Retention/2, time.Second), time.Minute)
}

// JanitorRule is what a capture source tells the janitor: which rows may
// go once they are older than the retention.
type JanitorRule struct {
	// Rows names them for the log: "confirmed", "dispatched".
	Rows string
	// Column is the timestamp column whose age counts, Key the connector
	// key that names it (for the error of a table without it).
	Column, Key string
	// Ready, when set, runs first in each batch's transaction, which is
	// then REPEATABLE READ: it returns once every row that transaction
	// sees may go, or an error, and the batch deletes nothing. source is
	// the server the capture source reads (its slot): tx itself, or on a
	// hot standby database.hostname while tx runs on the primary.
	Ready func(ctx context.Context, tx pgx.Tx, source Querier) error
}

// Querier is what Ready reads the source's server through: a *pgx.Conn
// or a pgx.Tx.
type Querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Janitor deletes outbox rows older than the retention, in small batches,
// on its own connection, outside the stream's hot path, as its Rule
// allows. Deletes are not routed (the router skips them). A round lists
// the outbox tables afresh (IncludedTables) and deletes batch by batch
// until a batch finds fewer rows than its size.
type Janitor struct {
	Cfg  JanitorConfig
	PG   *Config
	Rule JanitorRule
	Log  *slog.Logger
	// Active says whether this instance captures (it streams, or holds
	// poll buckets): only that one cleans up.
	Active func() bool
	// Deleted, when set, is told how many rows each batch deleted.
	Deleted func(n int64)
}

// Run cleans up every interval until ctx ends, while Active; a failed
// round is logged and tried again next round.
func (j *Janitor) Run(ctx context.Context) {
	every := j.Cfg.Interval()
	j.Log.Info("janitor: deleting "+j.Rule.Rows+" outbox rows older than the retention",
		"retention", j.Cfg.Retention.String(), "column", j.Rule.Column, "batch", j.Cfg.Batch, "every", every.String())
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !j.Active() {
			continue
		}
		n, err := j.Round(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			j.Log.Warn("janitor: clean-up round failed; trying again next round", "deleted", n, "err", err)
		} else if n > 0 {
			j.Log.Info("janitor: deleted old outbox rows", "rows", n)
		}
	}
}

// Round deletes old rows from every outbox table, batch by batch, and
// returns how many.
func (j *Janitor) Round(ctx context.Context) (int64, error) {
	conn, err := j.PG.Connect(ctx)
	if err != nil {
		return 0, fmt.Errorf("janitor: %w", err)
	}
	defer conn.Close(context.Background())
	tables, err := IncludedTables(ctx, conn, j.PG)
	if err != nil {
		return 0, fmt.Errorf("janitor: %w", err)
	}
	writer, err := j.writer(ctx, conn)
	if err != nil {
		return 0, err
	}
	if writer != conn {
		defer writer.Close(context.Background())
	}
	return j.clean(ctx, tables, func(table string) (int64, error) { return j.batch(ctx, writer, conn, table) })
}

// writer is the connection the deletes run on: conn, or when conn is a
// hot standby (decoding there, database.primary.hostname set) a new
// connection to the primary, once its system identifier is the standby's.
// After a promotion conn is the primary again.
func (j *Janitor) writer(ctx context.Context, conn *pgx.Conn) (*pgx.Conn, error) {
	if j.PG.Primary() == nil {
		return conn, nil
	}
	var standby bool
	if err := conn.QueryRow(ctx, `SELECT pg_is_in_recovery()`).Scan(&standby); err != nil {
		return nil, fmt.Errorf("janitor: pg_is_in_recovery(): %w", err)
	}
	if !standby {
		return conn, nil
	}
	// The rule compares the standby slot's position with the writer's WAL
	// position: only within one cluster is that meaningful, so a
	// database.primary.hostname of another cluster (ErrNotThePrimary) gets
	// no DELETE.
	w, err := j.PG.ConnectPrimary(ctx, conn)
	if err != nil {
		return nil, fmt.Errorf("janitor: database.hostname is a hot standby; the deletes go to database.primary.hostname: %w", err)
	}
	return w, nil
}

// clean runs batch on each table until a batch deletes fewer rows than
// Cfg.Batch, pausing Cfg.Pause between two batches, and returns the total.
func (j *Janitor) clean(ctx context.Context, tables []string, batch func(table string) (int64, error)) (int64, error) {
	var total int64
	for _, table := range tables {
		for {
			n, err := batch(table)
			total += n
			if j.Deleted != nil {
				j.Deleted(n)
			}
			if err != nil {
				return total, err
			}
			if n < int64(j.Cfg.Batch) {
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

// batch deletes one batch of table in a transaction of its own, after
// Rule.Ready.
func (j *Janitor) batch(ctx context.Context, conn, source *pgx.Conn, table string) (int64, error) {
	opts := pgx.TxOptions{}
	if j.Rule.Ready != nil {
		opts.IsoLevel = pgx.RepeatableRead
	}
	tx, err := conn.BeginTx(ctx, opts)
	if err != nil {
		return 0, fmt.Errorf("janitor: begin: %w", err)
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck // after Commit a no-op
	if j.Rule.Ready != nil {
		var src Querier = tx
		if source != conn {
			src = source
		}
		if err := j.Rule.Ready(ctx, tx, src); err != nil {
			return 0, err
		}
	}
	n, err := j.delete(ctx, tx, table)
	if err != nil {
		return 0, err
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("janitor: commit: %w", err)
	}
	return n, nil
}

// delete is one DELETE of at most Cfg.Batch rows older than the retention.
// ctid = ANY(ARRAY(...)) is a TID scan: the batch touches only the rows
// it picked, and LIMIT keeps each statement (and its WAL) small. The age
// test is repeated outside: in a partitioned table a ctid is unique only
// within one partition, and a young row elsewhere may share it.
func (j *Janitor) delete(ctx context.Context, tx pgx.Tx, table string) (int64, error) {
	qt := QuoteTables([]string{table})[0]
	old := fmt.Sprintf(`%s < now() - $1::bigint * interval '1 millisecond'`, QuoteIdent(j.Rule.Column))
	stmt := fmt.Sprintf(`DELETE FROM %s WHERE ctid = ANY(ARRAY(SELECT ctid FROM %s WHERE %s LIMIT $2)) AND %s`, qt, qt, old, old)
	tag, err := tx.Exec(ctx, stmt, j.Cfg.Retention.Milliseconds(), j.Cfg.Batch)
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "42501" {
			return 0, fmt.Errorf("janitor: %s: %w; run GRANT DELETE ON %s TO %s; or unset %s", table, err, qt, QuoteIdent(j.PG.User), KeyRetention)
		}
		if errors.As(err, &pgErr) && pgErr.Code == "42703" {
			return 0, fmt.Errorf("janitor: %s has no column %s: %w; set %s to its timestamp column", table, j.Rule.Column, err, j.Rule.Key)
		}
		return 0, fmt.Errorf("janitor: deleting from %s: %w", table, err)
	}
	return tag.RowsAffected(), nil
}
