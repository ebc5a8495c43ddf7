package replication

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/outboxrelay/outboxrelay/capture"
	"github.com/outboxrelay/outboxrelay/postgres"
)

// The initial snapshot yields the rows of the outbox tables as one
// pseudo-transaction at the slot's consistent point (Begin, rows as reads,
// Commit, SnapshotDone), so the in-flight budget and acknowledgements work
// as for streamed rows. Rows committed before the consistent point are
// exactly the rows the slot's exported snapshot sees, and the stream starts
// at that point: no gap, no duplicate. A redo after a snapshot that did not
// finish reads in a new snapshot instead.
//
// Rows are read in text format, the form pgoutput sends, so the router sees
// the same bytes either way. Progress is logged every 10 s.

// snapshotStep is where the snapshot's pseudo-transaction stands.
type snapshotStep int

const (
	snapBegin snapshotStep = iota
	snapRows
	snapCommit
	snapDone
	snapAcked // SnapshotDone was called
)

// snapshotReader reads the outbox tables one row at a time on the ordinary
// connection, inside one REPEATABLE READ transaction.
type snapshotReader struct {
	tx      pgx.Tx
	tables  []string
	next    int // index of the next table to open
	rr      *pgconn.ResultReader
	table   string
	rows    int // rows read of the current table
	total   int
	est     int64
	lastLog time.Time
	step    snapshotStep
	started time.Time
	log     *slog.Logger
}

// openSnapshot begins the snapshot's transaction. name is the slot's
// exported snapshot, or "" for a new snapshot.
func (s *stream) openSnapshot(ctx context.Context, name string) error {
	tx, err := s.conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return fmt.Errorf("snapshot: begin: %w", err)
	}
	if name != "" {
		if _, err := tx.Exec(ctx, "SET TRANSACTION SNAPSHOT '"+escapeLiteral(name)+"'"); err != nil {
			tx.Rollback(context.Background()) //nolint:errcheck // the error above is the one to report
			return fmt.Errorf("snapshot: importing exported snapshot %q: %w", name, err)
		}
	}
	// The read lasts as long as Kafka takes to acknowledge the rows; a
	// statement_timeout of the role would cancel it and start it over.
	if _, err := tx.Exec(ctx, "SET LOCAL statement_timeout = 0"); err != nil {
		tx.Rollback(context.Background()) //nolint:errcheck // the error above is the one to report
		return fmt.Errorf("snapshot: SET LOCAL statement_timeout = 0: %w", err)
	}
	s.snap = &snapshotReader{tx: tx, tables: s.srv.Tables, log: s.src.opt.Log, started: time.Now()}
	return nil
}

// nextSnapshot yields the snapshot's next event.
func (s *stream) nextSnapshot(ctx context.Context) (*capture.Event, error) {
	r := s.snap
	switch r.step {
	case snapBegin:
		r.step = snapRows
		s.row.Position = 0
		s.ev = capture.Event{Kind: capture.KindBegin, LSN: s.from, Snapshot: true}
		return &s.ev, nil
	case snapRows:
		ok, err := r.read(ctx, &s.row)
		if err != nil {
			return nil, err
		}
		if ok {
			s.ev = capture.Event{Kind: capture.KindRow, LSN: s.from, Row: &s.row}
			return &s.ev, nil
		}
		if err := r.tx.Commit(ctx); err != nil {
			return nil, fmt.Errorf("snapshot: commit: %w", err)
		}
		r.step = snapCommit
		s.ev = capture.Event{Kind: capture.KindCommit, LSN: s.from, EndLSN: s.from}
		return &s.ev, nil
	case snapCommit:
		r.step = snapDone
		s.ev = capture.Event{Kind: capture.KindSnapshotDone, LSN: s.from}
		return &s.ev, nil
	}
	return nil, fmt.Errorf("snapshot: Next before SnapshotDone")
}

// SnapshotDone drops the pending marker now that Kafka acknowledged every
// snapshot row, then starts streaming, or ends the stream under
// snapshot.mode=initial_only.
// On a hot standby a 40001 or 40P01 is an ErrRecoveryConflict.
func (s *stream) SnapshotDone(ctx context.Context) error {
	return standbyError(s.snapshotDone(ctx), s.srv.InRecovery)
}

func (s *stream) snapshotDone(ctx context.Context) error {
	r := s.snap
	if r == nil || r.step != snapDone {
		return errNoSnapshot
	}
	if err := s.lockLost(); err != nil {
		return err // the instance taking over redoes the snapshot
	}
	r.step = snapAcked
	if err := markSnapshotDone(ctx, s.conn, s.cfg.Slot); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	if s.cfg.SlotFailover {
		if err := enableFailover(ctx, s.repl, s.cfg.Slot, s.src.opt.Log); err != nil {
			return err
		}
	}
	s.snap = nil
	log := s.src.opt.Log
	log.Info("snapshot: done", "rows", r.total, "took", time.Since(r.started).Round(time.Millisecond).String())
	if s.plan.StopAfterSnapshot {
		log.Info("snapshot.mode=initial_only: snapshot done, stopping; the slot stays at its consistent point and keeps WAL until a relay streams from it or it is dropped",
			"slot", s.cfg.Slot, "drop", fmt.Sprintf("SELECT pg_drop_replication_slot('%s');", s.cfg.Slot))
		s.ended = true
		return capture.ErrEnd
	}
	return s.startReplication(ctx)
}

// read binds the next row into row, opening the next table when one ends;
// false when every table is read.
func (r *snapshotReader) read(ctx context.Context, row *capture.Row) (bool, error) {
	for {
		if r.rr == nil {
			if r.next == len(r.tables) {
				return false, nil
			}
			if err := r.open(ctx, row); err != nil {
				return false, err
			}
		}
		if r.rr.NextRow() {
			for i, v := range r.rr.Values() {
				row.Columns[i].Text = v
				row.Columns[i].Null = v == nil
			}
			row.Position++
			r.rows++
			r.total++
			if time.Since(r.lastLog) >= 10*time.Second {
				r.log.Info("snapshot: progress", "table", r.table, "rows", r.rows, "estimated_rows", r.est)
				r.lastLog = time.Now()
			}
			return true, nil
		}
		_, err := r.rr.Close()
		r.rr = nil
		if err != nil {
			return false, fmt.Errorf("snapshot: reading %s: %w", r.table, err)
		}
		r.log.Info("snapshot: table done", "table", r.table, "rows", r.rows)
	}
}

// open starts reading the next table and binds row's columns to it.
func (r *snapshotReader) open(ctx context.Context, row *capture.Row) error {
	r.table = r.tables[r.next]
	r.next++
	r.rows = 0
	r.lastLog = time.Now()
	schema, name, _ := strings.Cut(r.table, ".")
	qt := postgres.QuoteIdent(schema) + "." + postgres.QuoteIdent(name)
	_ = r.tx.QueryRow(ctx, `SELECT reltuples::bigint FROM pg_class WHERE oid = $1::regclass`, qt).Scan(&r.est)
	r.log.Info("snapshot: reading table", "table", r.table, "estimated_rows", r.est)
	nullable := map[string]bool{}
	rows, err := r.tx.Query(ctx, `SELECT attname, NOT attnotnull FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped`, qt)
	if err != nil {
		return fmt.Errorf("snapshot: reading columns of %s: %w", r.table, err)
	}
	var col string
	var null bool
	if _, err := pgx.ForEachRow(rows, []any{&col, &null}, func() error { nullable[col] = null; return nil }); err != nil {
		return fmt.Errorf("snapshot: reading columns of %s: %w", r.table, err)
	}
	r.rr = r.tx.Conn().PgConn().ExecParams(ctx, "SELECT * FROM "+qt, nil, nil, nil, nil)
	fields := r.rr.FieldDescriptions()
	*row = capture.Row{Op: capture.OpRead, Table: r.table, Columns: make([]capture.Column, len(fields))}
	for i, f := range fields {
		row.Columns[i] = capture.Column{Name: f.Name, OID: f.DataTypeOID, Nullable: nullable[f.Name]}
	}
	return nil
}

// close ends a snapshot that did not finish.
func (r *snapshotReader) close() {
	if r.rr != nil {
		r.rr.Close() //nolint:errcheck // abandoning the read
		r.rr = nil
	}
	if r.tx != nil {
		r.tx.Rollback(context.Background()) //nolint:errcheck // read-only
	}
}
