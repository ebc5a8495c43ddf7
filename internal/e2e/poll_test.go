package e2e_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// pollTableSQL is the fixture's outbox table as poll mode wants it: the
// dispatched column and the partial index on undispatched rows.
func pollTableSQL(schema string) []string {
	return []string{
		`CREATE SCHEMA ` + schema,
		`CREATE TABLE ` + schema + `.outbox (id bigserial PRIMARY KEY, aggregatetype text NOT NULL, aggregateid text NOT NULL, type text NOT NULL DEFAULT 'e', payload jsonb, dispatched_at timestamptz)`,
		`CREATE INDEX ON ` + schema + `.outbox (id) WHERE dispatched_at IS NULL`,
	}
}

// pollConfig is the fixture's connector file in poll mode.
func pollConfig(t *testing.T, f *fixture, overrides map[string]string) string {
	t.Helper()
	c := map[string]string{
		"outbox.capture.mode":     "poll",
		"outbox.poll.interval.ms": "100",
	}
	for k, v := range overrides {
		c[k] = v
	}
	return f.config(t, c)
}

// undispatched counts the rows poll mode has not marked yet.
func undispatched(t *testing.T, conn *pgx.Conn, f *fixture) int {
	t.Helper()
	var n int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM `+f.name+`.outbox WHERE dispatched_at IS NULL`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// waitDispatched waits until every row is marked dispatched.
func waitDispatched(t *testing.T, conn *pgx.Conn, f *fixture, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		n := undispatched(t, conn, f)
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d rows still undispatched after %s", n, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestPollNoReplication: on a server with wal_level=replica (a private
// cluster), a role without REPLICATION, with only SELECT and UPDATE on the
// outbox table, relays in poll mode: every row once, the rows marked
// dispatched after Kafka acknowledged them, and a row committed late with a
// lower id than rows already dispatched is still published.
func TestPollNoReplication(t *testing.T) {
	t.Parallel()
	port := privateCluster(t, "wal_level = replica")
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close(context.Background()) })
	f := &fixture{admin: admin, name: fmt.Sprintf("e2e_pollrepl_%d_%d", time.Now().UnixNano()%1e12, nameSeq.Add(1))}
	t.Cleanup(func() { deleteTopics(t, f.name+".") })
	stmts := append(pollTableSQL(f.name),
		`CREATE ROLE poller LOGIN NOREPLICATION NOSUPERUSER PASSWORD 'poller'`,
		`GRANT USAGE ON SCHEMA `+f.name+` TO poller`,
		`GRANT SELECT, UPDATE ON `+f.name+`.outbox TO poller`)
	for _, s := range stmts {
		if _, err := admin.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	var level string
	var repl bool
	if err := admin.QueryRow(ctx, `SELECT current_setting('wal_level'), rolreplication FROM pg_roles WHERE rolname = 'poller'`).Scan(&level, &repl); err != nil || level != "replica" || repl {
		t.Fatalf("wal_level %q, poller has REPLICATION %t (%v): want replica, false", level, repl, err)
	}
	insert := `INSERT INTO ` + f.name + `.outbox (aggregatetype, aggregateid, payload) SELECT 'order', 'a' || (g % 3), jsonb_build_object('n', g) FROM generate_series(1, $1::int) g`
	if _, err := admin.Exec(ctx, insert, 20); err != nil {
		t.Fatal(err)
	}
	cfg := pollConfig(t, f, map[string]string{
		"database.hostname": "127.0.0.1", "database.port": strconv.Itoa(port),
		"database.user": "poller", "database.password": "poller", "database.dbname": "postgres",
	})
	r := startRelay(t, cfg)
	recs := f.consume(t, f.topic("order"), 20, 60*time.Second, time.Second)
	waitDispatched(t, admin, f, 30*time.Second)

	// A row committed late: its id is lower than rows inserted and
	// dispatched after it.
	other, err := pgx.Connect(ctx, fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(context.Background())
	late, err := other.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var lateID int64
	if err := late.QueryRow(ctx, `INSERT INTO `+f.name+`.outbox (aggregatetype, aggregateid, payload) VALUES ('order', 'late', '{}') RETURNING id`).Scan(&lateID); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, insert, 5); err != nil {
		t.Fatal(err)
	}
	f.consume(t, f.topic("order"), 25, 60*time.Second, 0)
	waitDispatched(t, admin, f, 30*time.Second)
	if err := late.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	recs = f.consume(t, f.topic("order"), 26, 60*time.Second, time.Second)
	waitDispatched(t, admin, f, 30*time.Second)
	counts := countIDs(recs)
	if len(recs) != 26 || len(counts) != 26 || counts[lateID] != 1 {
		t.Fatalf("got %d records of %d ids (late row %d: %d times); want 26 records, each id once", len(recs), len(counts), lateID, counts[lateID])
	}
	r.stop(t, 20*time.Second)
	t.Logf("wal_level=replica, role without REPLICATION: 26 rows relayed in poll mode, each once, all marked dispatched; the late row %d too", lateID)
}
