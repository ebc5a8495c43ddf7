package postgres

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ErrNoOutboxTables: table.include.list matches no table of the database.
var ErrNoOutboxTables = errors.New("no outbox table matches table.include.list")

// IncludedTables lists, sorted, the ordinary and partitioned tables whose
// schema.table matches table.include.list. Partitions are left out: a
// partitioned outbox is captured under its own name (logical replication
// publishes via the root), so its partitions are not tables of their own.
//
// A list that matches no table is no error here: each source decides
// (RequireTables; logical replication allows it with outbox.messages.only).
func IncludedTables(ctx context.Context, conn *pgx.Conn, cfg *Config) ([]string, error) {
	rows, err := conn.Query(ctx, `SELECT n.nspname || '.' || c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition
		AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%'`)
	if err != nil {
		return nil, fmt.Errorf("listing tables: %w", err)
	}
	all, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("listing tables: %w", err)
	}
	var out []string
	for _, t := range all {
		schema, table, _ := strings.Cut(t, ".")
		if cfg.Includes(schema, table) {
			out = append(out, t)
		}
	}
	sort.Strings(out)
	return out, nil
}

// RequireTables refuses tables when it is empty (ErrNoOutboxTables), with
// what to do: the relay never starts on a table.include.list that matches
// nothing, a typo or a table not created yet.
func RequireTables(cfg *Config, tables []string) error {
	if len(tables) > 0 {
		return nil
	}
	return fmt.Errorf("%w: no table of database %q matches table.include.list %q; create the outbox table (outboxrelay sql) or fix the list (regexes on schema.table, e.g. public.outbox)",
		ErrNoOutboxTables, cfg.DBName, cfg.TablesText)
}

// QuoteTables quotes "schema.table" names for SQL, as QuoteIdent does.
func QuoteTables(ts []string) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		schema, table, _ := strings.Cut(t, ".")
		out[i] = QuoteIdent(schema) + "." + QuoteIdent(table)
	}
	return out
}

// ConnectError wraps a failed connection (op: what was being opened) with
// where it went and, for the failures a person must fix, which connector
// key to look at.
func (c *Config) ConnectError(op string, err error) error {
	hint := ""
	var pgErr *pgconn.PgError
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	switch {
	case errors.As(err, &unknownCA):
		hint = "; the server certificate is not signed by database.sslrootcert: set it to the CA that signed it"
	case errors.As(err, &hostname):
		hint = "; the server certificate does not name database.hostname: connect by a name it lists, or use database.sslmode=verify-ca"
	case errors.As(err, &pgErr) && pgErr.Code == "28P01":
		hint = "; check database.user and database.password"
	case errors.As(err, &pgErr) && pgErr.Code == "28000":
		hint = "; add a pg_hba.conf line for this user, database and address (replication connections need one for the database too)"
	case errors.As(err, &pgErr) && pgErr.Code == "3D000":
		hint = "; check database.dbname"
	}
	if h, ok := c.authRefusal(err); ok {
		return fmt.Errorf("%s to %s as %s: %w: %w%s", op, c.Where(), c.User, ErrAuthMethod, err, h)
	}
	return fmt.Errorf("%s to %s as %s: %w%s", op, c.Where(), c.User, err, hint)
}

// Column is what the catalog says about one column of a table.
type Column struct {
	Type     string // format_type, e.g. "timestamp with time zone"
	TypeName string // pg_type.typname, e.g. "timestamptz"
	NotNull  bool
	Primary  bool // part of the primary key
}

// Columns reads the columns of a table, rel as regclass reads it: its
// quoted name ("schema"."table") or its OID in decimal. It returns them
// by name.
func Columns(ctx context.Context, conn *pgx.Conn, rel string) (map[string]Column, error) {
	rows, err := conn.Query(ctx, `SELECT a.attname, format_type(a.atttypid, a.atttypmod), t.typname, a.attnotnull, coalesce(a.attnum = ANY(i.indkey), false)
		FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
		LEFT JOIN pg_index i ON i.indrelid = a.attrelid AND i.indisprimary
		WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped`, rel)
	if err != nil {
		return nil, fmt.Errorf("reading the columns from pg_attribute: %w", err)
	}
	out := map[string]Column{}
	var name string
	var c Column
	if _, err := pgx.ForEachRow(rows, []any{&name, &c.Type, &c.TypeName, &c.NotNull, &c.Primary}, func() error { out[name] = c; return nil }); err != nil {
		return nil, fmt.Errorf("reading the columns from pg_attribute: %w", err)
	}
	return out, nil
}
