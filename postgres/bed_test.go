package postgres_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
	"github.com/outboxrelay/outboxrelay/postgres"
)

// TestCatalog: IncludedTables lists the partitioned outbox under its own
// name and not its partitions; Columns reads the same columns by quoted
// name and by OID, with type, nullability and primary-key membership.
func TestCatalog(t *testing.T) {
	admin := testbed.Admin(t)
	schema := fmt.Sprintf("catalog_%d", time.Now().UnixNano())
	testbed.Exec(t, admin,
		`CREATE SCHEMA `+schema,
		`CREATE TABLE `+schema+`."Outbox" (id bigint, at timestamptz NOT NULL, note text, PRIMARY KEY (id, at)) PARTITION BY RANGE (at)`,
		`CREATE TABLE `+schema+`.outbox_2026 PARTITION OF `+schema+`."Outbox" FOR VALUES FROM ('2026-01-01') TO ('2027-01-01')`,
		`CREATE TABLE `+schema+`.other (id bigint)`,
		`GRANT USAGE ON SCHEMA `+schema+` TO debezium`,
	)
	t.Cleanup(func() { testbed.Exec(t, admin, `DROP SCHEMA IF EXISTS `+schema+` CASCADE`) })
	host, port := testbed.PostgresHostPort(t)
	cfg, err := postgres.ParseConfig(map[string]string{
		"database.hostname": host, "database.port": strconv.Itoa(port), "database.user": "debezium", "database.password": "debezium@123",
		"database.dbname": "order_db", "database.sslmode": "disable", "table.include.list": schema + `\..*`,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	conn, err := cfg.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tables, err := postgres.IncludedTables(ctx, conn, &cfg)
	if want := schema + ".Outbox " + schema + ".other"; err != nil || strings.Join(tables, " ") != want {
		t.Fatalf("IncludedTables: %q, %v; want %q (no partition)", tables, err, want)
	}
	if err := postgres.RequireTables(&cfg, nil); err == nil || !strings.Contains(err.Error(), "table.include.list") {
		t.Errorf("RequireTables of none: %v", err)
	}
	quoted := postgres.QuoteTables(tables[:1])[0]
	if quoted != schema+`."Outbox"` {
		t.Fatalf("QuoteTables: %s", quoted)
	}
	var oid uint32
	if err := admin.QueryRow(ctx, `SELECT $1::regclass::oid`, quoted).Scan(&oid); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{quoted, strconv.FormatUint(uint64(oid), 10)} {
		cols, err := postgres.Columns(ctx, conn, rel)
		if err != nil {
			t.Fatalf("Columns(%s): %v", rel, err)
		}
		want := map[string]postgres.Column{
			"id":   {Type: "bigint", TypeName: "int8", NotNull: true, Primary: true},
			"at":   {Type: "timestamp with time zone", TypeName: "timestamptz", NotNull: true, Primary: true},
			"note": {Type: "text", TypeName: "text"},
		}
		if len(cols) != len(want) {
			t.Errorf("Columns(%s): %+v, want %+v", rel, cols, want)
		}
		for name, w := range want {
			if cols[name] != w {
				t.Errorf("Columns(%s) %s: %+v, want %+v", rel, name, cols[name], w)
			}
		}
	}
}

// TestQuoteIdentAgreesWithServer (issue 27, item 8): for every keyword of
// the bed's server, and a few names that are not, QuoteIdent writes what
// the server's quote_ident writes.
func TestQuoteIdentAgreesWithServer(t *testing.T) {
	admin := testbed.Admin(t)
	rows, err := admin.Query(context.Background(),
		`SELECT w, quote_ident(w) FROM (SELECT word FROM pg_get_keywords() UNION ALL VALUES ('outbox'), ('Outbox'), ('1st'), ('we"ird')) k(w)`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var word, want string
		if err := rows.Scan(&word, &want); err != nil {
			t.Fatal(err)
		}
		if got := postgres.QuoteIdent(word); got != want {
			t.Errorf("QuoteIdent(%q) = %s, the server's quote_ident %s", word, got, want)
		}
		n++
	}
	if err := rows.Err(); err != nil || n < 400 {
		t.Fatalf("%d keywords read, err %v", n, err)
	}
}
