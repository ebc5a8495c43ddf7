package outbox

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// column is one column of the outbox table as the catalog describes it.
type column struct {
	name       string
	sqlType    string // format_type(): what a cast to the column's type writes
	baseType   string // pg_type.typname of the type, or of a domain's base type
	notNull    bool
	hasDefault bool // a DEFAULT, an identity or a serial
	generated  bool // GENERATED ALWAYS AS (…) STORED: cannot be written
}

// columnsQuery lists the table's live columns in order. to_regclass
// returns NULL for a missing table instead of failing, so the error can
// say what to do.
const columnsQuery = `SELECT a.attname, format_type(a.atttypid, a.atttypmod),
       coalesce(bt.typname, t.typname), a.attnotnull,
       a.atthasdef OR a.attidentity <> '', a.attgenerated <> ''
  FROM pg_attribute a
  JOIN pg_type t ON t.oid = a.atttypid
  LEFT JOIN pg_type bt ON t.typtype = 'd' AND bt.oid = t.typbasetype
 WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped
 ORDER BY a.attnum`

// PgxQuerier is what New reads the table's columns with: *pgx.Conn,
// *pgxpool.Pool or a pgx.Tx.
type PgxQuerier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// SQLQuerier is what NewSQL reads the table's columns with: *sql.DB,
// *sql.Conn or *sql.Tx.
type SQLQuerier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// scanner is the part of pgx.Rows and *sql.Rows that readColumns needs.
type scanner interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

func readColumns(rows scanner, table string) ([]column, error) {
	var cols []column
	for rows.Next() {
		var c column
		if err := rows.Scan(&c.name, &c.sqlType, &c.baseType, &c.notNull, &c.hasDefault, &c.generated); err != nil {
			return nil, fmt.Errorf("outbox: reading the columns of %s: %w", table, err)
		}
		cols = append(cols, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("outbox: reading the columns of %s: %w", table, err)
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("outbox: table %s does not exist (or this role cannot see it); create it (outboxrelay sql prints the DDL) or set Options.Table", table)
	}
	return cols, nil
}

// New reads the outbox table's columns through q and returns a Writer for
// it. Call it once at start-up, after the table exists; a Writer is safe
// for concurrent use. A change to the table's columns needs a new Writer.
func New(ctx context.Context, q PgxQuerier, opts Options) (*Writer, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	rows, err := q.Query(ctx, columnsQuery, quotedName(opts.Table))
	if err != nil {
		return nil, fmt.Errorf("outbox: reading the columns of %s: %w", opts.Table, err)
	}
	defer rows.Close()
	cols, err := readColumns(rows, opts.Table)
	if err != nil {
		return nil, err
	}
	return newWriter(opts, cols)
}

// NewSQL is New for database/sql.
func NewSQL(ctx context.Context, q SQLQuerier, opts Options) (*Writer, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	rows, err := q.QueryContext(ctx, columnsQuery, quotedName(opts.Table))
	if err != nil {
		return nil, fmt.Errorf("outbox: reading the columns of %s: %w", opts.Table, err)
	}
	defer rows.Close()
	cols, err := readColumns(rows, opts.Table)
	if err != nil {
		return nil, err
	}
	return newWriter(opts, cols)
}
