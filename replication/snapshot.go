package replication

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/outboxrelay/outboxrelay/router"
)

// readSnapshot reads every row of the outbox tables inside the exported
// snapshot of a new slot and hands each to emit as a snapshot read (op r).
// Rows committed before the slot's consistent point are exactly the rows this
// snapshot sees, and the stream starts at that point: no gap, no duplicate.
// With snapshot "" it reads in a new snapshot (a redo after a failed one).
//
// Rows are read in text format, the form pgoutput sends, so the router sees
// the same bytes either way. Progress is logged every 10 s.
func readSnapshot(ctx context.Context, conn *pgx.Conn, snapshot string, tables []string, emit func(*router.Event) error, log *slog.Logger) (int, error) {
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return 0, fmt.Errorf("snapshot: begin: %w", err)
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck // read-only; rollback after commit is a no-op
	if snapshot != "" {
		if _, err := tx.Exec(ctx, "SET TRANSACTION SNAPSHOT '"+escapeLiteral(snapshot)+"'"); err != nil {
			return 0, fmt.Errorf("snapshot: importing exported snapshot %q: %w", snapshot, err)
		}
	}
	// The read lasts as long as Kafka takes to acknowledge the rows; a
	// statement_timeout of the role would cancel it and start it over.
	if _, err := tx.Exec(ctx, "SET LOCAL statement_timeout = 0"); err != nil {
		return 0, fmt.Errorf("snapshot: SET LOCAL statement_timeout = 0: %w", err)
	}
	total := 0
	for _, table := range tables {
		n, err := readTable(ctx, tx, table, emit, log)
		total += n
		if err != nil {
			return total, err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return total, fmt.Errorf("snapshot: commit: %w", err)
	}
	return total, nil
}

func readTable(ctx context.Context, tx pgx.Tx, table string, emit func(*router.Event) error, log *slog.Logger) (int, error) {
	schema, name, _ := strings.Cut(table, ".")
	var estimate int64
	_ = tx.QueryRow(ctx, `SELECT reltuples::bigint FROM pg_class WHERE oid = $1::regclass`, QuoteIdent(schema)+"."+QuoteIdent(name)).Scan(&estimate)
	log.Info("snapshot: reading table", "table", table, "estimated_rows", estimate)

	nullable := map[string]bool{}
	rows, err := tx.Query(ctx, `SELECT attname, NOT attnotnull FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped`, QuoteIdent(schema)+"."+QuoteIdent(name))
	if err != nil {
		return 0, fmt.Errorf("snapshot: reading columns of %s: %w", table, err)
	}
	var col string
	var null bool
	if _, err := pgx.ForEachRow(rows, []any{&col, &null}, func() error { nullable[col] = null; return nil }); err != nil {
		return 0, fmt.Errorf("snapshot: reading columns of %s: %w", table, err)
	}

	rr := tx.Conn().PgConn().ExecParams(ctx, "SELECT * FROM "+QuoteIdent(schema)+"."+QuoteIdent(name), nil, nil, nil, nil)
	fields := rr.FieldDescriptions()
	ev := &router.Event{Op: router.OpRead, Table: table}
	ev.Columns = make([]router.Column, len(fields))
	for i, f := range fields {
		ev.Columns[i].Name = f.Name
		ev.Columns[i].Value.OID = f.DataTypeOID
		ev.Columns[i].Nullable = nullable[f.Name]
	}
	n := 0
	lastLog := time.Now()
	for rr.NextRow() {
		for i, v := range rr.Values() {
			ev.Columns[i].Value.Text = v
			ev.Columns[i].Value.Null = v == nil
		}
		ev.ProcessedAt = time.Now()
		if err := emit(ev); err != nil {
			rr.Close()
			return n, err
		}
		n++
		if time.Since(lastLog) >= 10*time.Second {
			log.Info("snapshot: progress", "table", table, "rows", n, "estimated_rows", estimate)
			lastLog = time.Now()
		}
	}
	if _, err := rr.Close(); err != nil {
		return n, fmt.Errorf("snapshot: reading %s: %w", table, err)
	}
	log.Info("snapshot: table done", "table", table, "rows", n)
	return n, nil
}
