package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
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

// runCheck runs outboxrelay check on cfg and returns its output and exit
// code.
func runCheck(t *testing.T, cfg string) (string, int) {
	t.Helper()
	out, err := exec.Command(relayBinary, "check", "--config", cfg, "--kafka-brokers", testbed.KafkaBrokers(t), "--timeout", "30s").CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return string(out), exit.ExitCode()
	}
	if err != nil {
		t.Fatalf("outboxrelay check: %v", err)
	}
	return string(out), 0
}

// TestPollNoReplication: on a server with wal_level=replica (a private
// cluster), a role without REPLICATION, with only SELECT and UPDATE on the
// outbox table, passes check in poll mode (once the partial index it asks
// for exists) and relays in poll mode: every row once, the rows marked
// dispatched after Kafka acknowledged them, and a row committed late with a
// lower id than rows already dispatched is still published.
func TestPollNoReplication(t *testing.T) {
	t.Parallel()
	port := testbed.StartPrivateCluster(t, "wal_level = replica").Port
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
	cfg := pollConfig(t, f, map[string]string{
		"database.hostname": "127.0.0.1", "database.port": strconv.Itoa(port),
		"database.user": "poller", "database.password": "poller", "database.dbname": "postgres",
	})
	// check: everything but the partial index, with its fix.
	if _, err := admin.Exec(ctx, `DROP INDEX `+f.name+`.outbox_id_idx`); err != nil {
		t.Fatal(err)
	}
	out, code := runCheck(t, cfg)
	if code != 1 || !strings.Contains(out, "✓ capture mode: poll") || !strings.Contains(out, "✗ partial index on "+f.name+".outbox") ||
		!strings.Contains(out, "fix: CREATE INDEX CONCURRENTLY outbox_undispatched ON "+f.name+".outbox (id) WHERE dispatched_at IS NULL;") {
		t.Fatalf("check without the partial index: exit %d; want 1 with the index's ✗ line and fix:\n%s", code, out)
	}
	if _, err := admin.Exec(ctx, `CREATE INDEX ON `+f.name+`.outbox (id) WHERE dispatched_at IS NULL`); err != nil {
		t.Fatal(err)
	}
	out, code = runCheck(t, cfg)
	if code != 0 {
		t.Fatalf("check in poll mode on wal_level=replica, role without REPLICATION: exit %d; want 0:\n%s", code, out)
	}
	t.Logf("check in poll mode:\n%s", out)
	insert := `INSERT INTO ` + f.name + `.outbox (aggregatetype, aggregateid, payload) SELECT 'order', 'a' || (g % 3), jsonb_build_object('n', g) FROM generate_series(1, $1::int) g`
	if _, err := admin.Exec(ctx, insert, 20); err != nil {
		t.Fatal(err)
	}
	r := startRelay(t, cfg)
	f.consume(t, f.topic("order"), 20, 60*time.Second, time.Second)
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
	recs := f.consume(t, f.topic("order"), 26, 60*time.Second, time.Second)
	waitDispatched(t, admin, f, 30*time.Second)
	counts := countIDs(recs)
	if len(recs) != 26 || len(counts) != 26 || counts[lateID] != 1 {
		t.Fatalf("got %d records of %d ids (late row %d: %d times); want 26 records, each id once", len(recs), len(counts), lateID, counts[lateID])
	}
	r.stop(t, 20*time.Second)
	t.Logf("wal_level=replica, role without REPLICATION: 26 rows relayed in poll mode, each once, all marked dispatched; the late row %d too", lateID)
}

// pollFixture is a fixture whose outbox has the dispatched column and its
// partial index, and whose role may set it.
func pollFixture(t *testing.T, short string) *fixture {
	t.Helper()
	f := newFixture(t, short)
	testbed.Exec(t, f.admin,
		`ALTER TABLE `+f.name+`.outbox ADD COLUMN dispatched_at timestamptz`,
		`CREATE INDEX ON `+f.name+`.outbox (id) WHERE dispatched_at IS NULL`,
		`GRANT UPDATE ON `+f.name+`.outbox TO debezium`)
	return f
}

// isDispatched reports whether row id is marked dispatched.
func isDispatched(t *testing.T, f *fixture, id int64) bool {
	t.Helper()
	var done bool
	if err := f.admin.QueryRow(context.Background(), `SELECT dispatched_at IS NOT NULL FROM `+f.name+`.outbox WHERE id = $1`, id).Scan(&done); err != nil {
		t.Fatal(err)
	}
	return done
}

// TestPollPoisonRow: in poll mode a row over max.request.size stops the
// relay (errors.tolerance=none) naming the row, with the rows before it
// marked dispatched and the row and those behind it not; the aggregate's
// later rows wait, as in logical mode, because publishing them would break
// its order. A restart with errors.tolerance=all dead-letters the row and
// goes on: the later row of the same aggregate is published and every row
// is marked.
func TestPollPoisonRow(t *testing.T) {
	t.Parallel()
	f := pollFixture(t, "pollpoison")
	r := startRelay(t, pollConfig(t, f, nil))
	good := insertCommitted(t, f.admin, goodRowSQL(f))
	f.consume(t, f.topic("good"), 1, 30*time.Second, 0)
	waitDispatched(t, f.admin, f, 30*time.Second)
	big := insertCommitted(t, f.admin, bigPayloadSQL(f))
	after := insertCommitted(t, f.admin, `INSERT INTO `+f.name+`.outbox (aggregatetype, aggregateid, payload) VALUES ('big', 'k', '{"small":true}') RETURNING id`)
	code, msg := waitRelayExit(t, r, 30*time.Second)
	if code != 1 || !strings.Contains(msg, fmt.Sprintf(`event id "%d"`, big.id)) || !strings.Contains(msg, "max.request.size") {
		t.Fatalf("exit %d, %q; want exit 1 naming event id %d and max.request.size", code, msg, big.id)
	}
	if !isDispatched(t, f, good.id) || isDispatched(t, f, big.id) || isDispatched(t, f, after.id) {
		t.Fatalf("dispatched: good %t, big %t, after %t; want true, false, false",
			isDispatched(t, f, good.id), isDispatched(t, f, big.id), isDispatched(t, f, after.id))
	}

	dlq := f.name + ".dlq"
	r = startRelay(t, pollConfig(t, f, map[string]string{"errors.tolerance": "all", "errors.deadletterqueue.topic.name": dlq}))
	recs := f.consume(t, f.topic("big"), 1, 30*time.Second, 300*time.Millisecond)
	if len(recs) != 1 || recs[0].ID != after.id {
		t.Fatalf("topic %s: ids %v; want only the later row %d", f.topic("big"), countIDs(recs), after.id)
	}
	msgs := testbed.Consume(t, dlq, nil, 1, 30*time.Second, 300*time.Millisecond)
	if len(msgs) != 1 || headerValue(msgs[0].Headers, "id") != strconv.FormatInt(big.id, 10) {
		t.Fatalf("dead-letter topic %s: %d records; want the big row %d", dlq, len(msgs), big.id)
	}
	waitDispatched(t, f.admin, f, 30*time.Second)
	r.stop(t, 20*time.Second)
	t.Logf("poll mode: the too-large row %d stopped the relay (%s); with errors.tolerance=all it was dead-lettered and the later row %d of its aggregate published", big.id, firstLine(msg), after.id)
}

// TestPollExampleDDL: the DDL of `outboxrelay sql --mode poll` (table,
// partial index, role grants), in a schema of its own, with the example
// connector's column names: check passes, the relay publishes the rows and
// marks them, its janitor (outbox.retention.ms) deletes them, and the
// clean-up statement for cron deletes dispatched rows only.
func TestPollExampleDDL(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "pollddl")
	testbed.Exec(t, f.admin, `DROP TABLE `+f.name+`.outbox`)
	for _, name := range []string{"outbox_poll.sql", "role_poll.sql"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "sql", name))
		if err != nil {
			t.Fatal(err)
		}
		ddl := strings.ReplaceAll(string(b), "public.outbox", f.name+".outbox")
		testbed.Exec(t, f.admin, strings.ReplaceAll(ddl, "outbox_undispatched", f.name+"_undispatched"))
	}
	cfg := pollConfig(t, f, map[string]string{
		"outbox.poll.order.column":                            "id",
		"transforms.outbox.table.field.event.id":              "message_id",
		"transforms.outbox.table.field.event.key":             "aggregate_id",
		"transforms.outbox.route.by.field":                    "aggregate_type",
		"transforms.outbox.table.fields.additional.placement": "event_type:header:eventType",
		"transforms.outbox.route.topic.replacement":           f.name + ".${routedByValue}",
		"outbox.retention.ms":                                 "1000",
	})
	testbed.Exec(t, f.admin, `GRANT DELETE ON `+f.name+`.outbox TO debezium`)
	if out, code := runCheck(t, cfg); code != 0 {
		t.Fatalf("check on the poll DDL: exit %d; want 0:\n%s", code, out)
	}
	r := startRelay(t, cfg)
	testbed.Exec(t, f.admin, `INSERT INTO `+f.name+`.outbox (aggregate_type, aggregate_id, event_type, payload)
		VALUES ('order', 'o-1', 'created', '{"n":1}'), ('order', 'o-1', 'paid', '{"n":2}'), ('order', 'o-2', 'created', '{"n":3}')`)
	msgs := testbed.Consume(t, f.topic("order"), nil, 3, 30*time.Second, 300*time.Millisecond)
	if len(msgs) != 3 || headerValue(msgs[0].Headers, "eventType") != "created" || headerValue(msgs[1].Headers, "eventType") != "paid" {
		t.Fatalf("topic %s: %d records; want created, paid, created", f.topic("order"), len(msgs))
	}
	waitDispatched(t, f.admin, f, 30*time.Second)
	// The janitor deletes dispatched rows once outbox.retention.ms passed.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		var n int
		if err := f.admin.QueryRow(context.Background(), `SELECT count(*) FROM `+f.name+`.outbox`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the poll janitor left %d dispatched rows after 30 s", n)
		}
	}
	r.stop(t, 20*time.Second)
	testbed.Exec(t, f.admin, `INSERT INTO `+f.name+`.outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('order', 'o-3', 'created', '{}')`)
	b, err := os.ReadFile(filepath.Join("..", "..", "sql", "cleanup_poll.sql"))
	if err != nil {
		t.Fatal(err)
	}
	cleanup := strings.ReplaceAll(strings.ReplaceAll(string(b), "public.outbox", f.name+".outbox"), "interval '7 days'", "interval '0 seconds'")
	testbed.Exec(t, f.admin, cleanup)
	var left int
	if err := f.admin.QueryRow(context.Background(), `SELECT count(*) FROM `+f.name+`.outbox`).Scan(&left); err != nil || left != 1 || undispatched(t, f.admin, f) != 1 {
		t.Fatalf("after the clean-up: %d rows (%v); want only the undispatched row kept", left, err)
	}
}
