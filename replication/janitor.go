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

	"github.com/outboxrelay/outboxrelay/capture"
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
	// snapshot; a batch that waits longer is left for the next round.
	ConfirmWait time.Duration
}

// ParseJanitorConfig reads the janitor's keys (outbox.retention.ms,
// outbox.retention.column) through their declarations (internal/confkey).
func ParseJanitorConfig(relay map[string]string) (JanitorConfig, error) {
	c := JanitorConfig{Batch: 1000, Pause: 100 * time.Millisecond, ConfirmWait: 30 * time.Second}
	v := confkey.Read(relay)
	var err error
	if c.Retention, err = v.Millis(KeyRetention); err != nil {
		return c, err
	}
	c.Column, err = v.Text(KeyRetentionColumn)
	return c, err
}

// Interval is the pause between two clean-up rounds: half the retention,
// between 1 s and 1 min, so rows live at most about 1.5 × the retention.
func (c JanitorConfig) Interval() time.Duration {
	return min(max(c.Retention/2, time.Second), time.Minute)
}

// Janitor deletes outbox rows older than the retention, in small batches,
// on its own connection, outside the stream's hot path. Deletes are not
// routed (the router skips them as it always did).
//
// # The safety rule: never delete a row the slot has not confirmed
//
// Each batch runs in a REPEATABLE READ transaction. Its first statement
// takes the transaction's snapshot S and then reads W =
// pg_current_wal_insert_lsn(). A row is visible in S only if its inserting
// transaction had committed before S was taken, and PostgreSQL inserts a
// commit record into the WAL before it makes the transaction visible; so
// the commit record of every row S sees ends at or before W. The batch then
// waits until the slot's confirmed_flush_lsn (read live from
// pg_replication_slots, not from the snapshot) reaches W: by invariant 1
// every record of every transaction committed up to there is acknowledged
// by Kafka. Only then does it DELETE, and a DELETE in that transaction sees
// only S's rows. created_at alone would not do: it is the inserting
// transaction's start time, so a long transaction can commit, unconfirmed,
// a row that already looks old.
//
// A row updated after S (an application marking it sent) makes the DELETE
// fail with a serialization error; the batch is rolled back and tried again
// next round. The snapshot is held for at most ConfirmWait, which bounds
// how long the janitor holds back VACUUM.
type Janitor struct {
	Cfg JanitorConfig
	PG  *Config
	Log *slog.Logger
	// Active says whether this instance streams: only that one cleans up.
	Active func() bool
	// Deleted, when set, is told how many rows each batch deleted.
	Deleted func(n int64)
}

// Run cleans up every interval until ctx ends; a failed round is logged
// and tried again next round.
func (j *Janitor) Run(ctx context.Context) {
	j.Log.Info("janitor: deleting confirmed outbox rows older than the retention",
		"retention", j.Cfg.Retention.String(), "column", j.Cfg.Column, "batch", j.Cfg.Batch, "every", j.Cfg.Interval().String())
	RunRounds(ctx, j.Cfg.Interval(), j.Active, j.Round, j.Log)
}

// RunRounds calls round every interval while active says this instance
// streams, until ctx ends; a failed round is logged and tried again next
// round. The janitors of both capture modes run through it.
func RunRounds(ctx context.Context, every time.Duration, active func() bool, round func(context.Context) (int64, error), log *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !active() {
			continue
		}
		n, err := round(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			log.Warn("janitor: clean-up round failed; trying again next round", "deleted", n, "err", err)
		} else if n > 0 {
			log.Info("janitor: deleted old outbox rows", "rows", n)
		}
	}
}

// Round deletes old confirmed rows from every outbox table, batch by batch,
// until a batch finds fewer rows than its size, and returns how many.
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
	var total int64
	for _, table := range tables {
		for {
			n, err := j.batch(ctx, conn, table)
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

// errNotConfirmed: the slot did not confirm past the batch's snapshot in
// time; nothing was deleted.
var errNotConfirmed = errors.New("the slot has not confirmed past the batch's snapshot yet")

func (j *Janitor) batch(ctx context.Context, conn *pgx.Conn, table string) (int64, error) {
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		return 0, fmt.Errorf("janitor: begin: %w", err)
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck // after Commit a no-op
	var w capture.LSN
	var text string
	if err := tx.QueryRow(ctx, `SELECT pg_current_wal_insert_lsn()::text`).Scan(&text); err != nil {
		return 0, fmt.Errorf("janitor: reading the WAL insert position: %w", err)
	}
	if w, err = capture.ParseLSN(text); err != nil {
		return 0, fmt.Errorf("janitor: WAL insert position %q: %w", text, err)
	}
	if err := j.waitConfirmed(ctx, tx, w); err != nil {
		return 0, err
	}
	schema, name, _ := strings.Cut(table, ".")
	qt := QuoteIdent(schema) + "." + QuoteIdent(name)
	col := QuoteIdent(j.Cfg.Column)
	// ctid = ANY(ARRAY(...)) is a TID scan: the batch touches only the rows
	// it picked, and LIMIT keeps each statement (and its WAL) small. The
	// age test is repeated outside: in a partitioned table a ctid is unique
	// only within one partition, and a young row elsewhere may share it.
	old := fmt.Sprintf(`%s < now() - $1::bigint * interval '1 millisecond'`, col)
	stmt := fmt.Sprintf(`DELETE FROM %s WHERE ctid = ANY(ARRAY(SELECT ctid FROM %s WHERE %s LIMIT $2)) AND %s`, qt, qt, old, old)
	tag, err := tx.Exec(ctx, stmt, j.Cfg.Retention.Milliseconds(), j.Cfg.Batch)
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "42501" {
			return 0, fmt.Errorf("janitor: %s: %w; run GRANT DELETE ON %s TO %s; or unset %s", table, err, qt, QuoteIdent(j.PG.User), KeyRetention)
		}
		if errors.As(err, &pgErr) && pgErr.Code == "42703" {
			return 0, fmt.Errorf("janitor: %s has no column %s: %w; set %s to its insert-time column", table, j.Cfg.Column, err, KeyRetentionColumn)
		}
		return 0, fmt.Errorf("janitor: deleting from %s: %w", table, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("janitor: commit: %w", err)
	}
	return tag.RowsAffected(), nil
}

// waitConfirmed polls the slot until its confirmed_flush_lsn reaches w.
func (j *Janitor) waitConfirmed(ctx context.Context, tx pgx.Tx, w capture.LSN) error {
	deadline := time.Now().Add(j.Cfg.ConfirmWait)
	for {
		var text *string
		err := tx.QueryRow(ctx, `SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = $1`, j.PG.Slot).Scan(&text)
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && text == nil) {
			return fmt.Errorf("janitor: slot %q does not exist or has no confirmed position: %w", j.PG.Slot, errNotConfirmed)
		}
		if err != nil {
			return fmt.Errorf("janitor: reading slot %q: %w", j.PG.Slot, err)
		}
		c, err := capture.ParseLSN(*text)
		if err != nil {
			return fmt.Errorf("janitor: slot %q confirmed_flush_lsn %q: %w", j.PG.Slot, *text, err)
		}
		if c >= w {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("janitor: slot %q confirmed %s, the batch needs %s: %w", j.PG.Slot, c, w, errNotConfirmed)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
