package poll

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/outboxrelay/outboxrelay/postgres"
)

// ErrTable reports an outbox table poll mode cannot read as configured: a
// missing or mistyped column, named with the key and the fix. Not
// retryable.
var ErrTable = errors.New("poll mode: outbox table")

// columns reads the columns of a table ("schema.table"): name → type and
// nullability.
func columns(ctx context.Context, conn *pgx.Conn, name string) (map[string]postgres.Column, error) {
	cols, err := postgres.Columns(ctx, conn, postgres.QuoteTables([]string{name})[0])
	if err != nil {
		return nil, fmt.Errorf("poll mode: %s: %w", name, err)
	}
	return cols, nil
}

// isTimestamp reports whether a format_type names a timestamp type.
func isTimestamp(typ string) bool { return strings.HasPrefix(typ, "timestamp") }

// describe checks the table's columns against the configuration and
// returns how to read it. Every error names the key and the statement
// that fixes it.
func describe(ctx context.Context, conn *pgx.Conn, name string, cfg Config) (*table, error) {
	cols, err := columns(ctx, conn, name)
	if err != nil {
		return nil, err
	}
	return checkColumns(name, cols, cfg)
}

// checkColumns is describe's pure part.
func checkColumns(name string, cols map[string]postgres.Column, cfg Config) (*table, error) {
	q := postgres.QuoteTables([]string{name})[0]
	var errs []error
	need := func(col, key string) postgres.Column {
		c, ok := cols[col]
		if !ok {
			errs = append(errs, fmt.Errorf("%w %s has no column %q (%s)", ErrTable, name, col, key))
		}
		return c
	}
	id := need(cfg.IDColumn, "table.field.event.id")
	need(cfg.KeyColumn, "table.field.event.key")
	ord := need(cfg.Order, KeyOrder)
	if ord.Type != "" && !ord.NotNull {
		errs = append(errs, fmt.Errorf("%w %s: the order column %q (%s) may be NULL; a NULL row has no place in the order: ALTER TABLE %s ALTER COLUMN %s SET NOT NULL;",
			ErrTable, name, cfg.Order, KeyOrder, q, postgres.QuoteIdent(cfg.Order)))
	}
	if d, ok := cols[cfg.Dispatched]; !ok {
		errs = append(errs, fmt.Errorf("%w %s has no column %q (%s): ALTER TABLE %s ADD COLUMN %s timestamptz; %s",
			ErrTable, name, cfg.Dispatched, KeyDispatched, q, postgres.QuoteIdent(cfg.Dispatched), IndexSQL(name, cfg.Order, cfg.IDColumn, cfg.Dispatched)))
	} else if !isTimestamp(d.Type) {
		errs = append(errs, fmt.Errorf("%w %s: the dispatched column %q (%s) is %s; poll mode sets it to now(): use a timestamptz column",
			ErrTable, name, cfg.Dispatched, KeyDispatched, d.Type))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	t := &table{Name: name, Quoted: q, ID: postgres.QuoteIdent(cfg.IDColumn), IDType: id.Type,
		Key: postgres.QuoteIdent(cfg.KeyColumn), Order: postgres.QuoteIdent(cfg.Order), OrderType: ord.Type,
		Dispatched: postgres.QuoteIdent(cfg.Dispatched)}
	switch {
	case isTimestamp(ord.Type):
		t.Age = t.Order
	case isTimestamp(cols[cfg.AgeColumn].Type):
		t.Age = postgres.QuoteIdent(cfg.AgeColumn)
	}
	return t, nil
}

// HasIndex reports whether the table has a partial index whose predicate
// is "<dispatched> IS NULL".
func HasIndex(ctx context.Context, conn *pgx.Conn, name, dispatched string) (bool, error) {
	var n int
	err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_index i
		WHERE i.indrelid = $1::regclass AND i.indpred IS NOT NULL
		  AND pg_get_expr(i.indpred, i.indrelid) = $2`,
		postgres.QuoteTables([]string{name})[0], "("+postgres.QuoteIdent(dispatched)+" IS NULL)").Scan(&n)
	if err != nil {
		return false, fmt.Errorf("poll mode: reading the indexes of %s: %w", name, err)
	}
	return n > 0, nil
}

// CheckTable reports what describe would refuse about a table, for
// outboxrelay check: nil when poll mode can read it as configured.
func CheckTable(ctx context.Context, conn *pgx.Conn, name string, cfg Config) error {
	_, err := describe(ctx, conn, name, cfg)
	return err
}
