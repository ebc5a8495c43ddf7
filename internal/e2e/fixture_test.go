package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
	"github.com/outboxrelay/outboxrelay/replication"

	"github.com/outboxrelay/outboxrelay/capture"
)

// nameSeq makes names unique among the tests of one process; the time
// prefix makes them unique among processes.
var nameSeq atomic.Int64

// fixture is one test's private namespace on the bed: schema NAME with the
// tables outbox (Debezium's default column names) and other, publication
// NAME over both, slot NAME, and topics "NAME.<aggregatetype>".
type fixture struct {
	admin *pgx.Conn
	name  string
}

// newFixture creates the namespace and registers its removal: slot,
// publication, schema and every topic under the prefix.
func newFixture(t *testing.T, short string) *fixture {
	t.Helper()
	admin := testbed.Admin(t)
	testbed.KafkaBrokers(t)
	name := fmt.Sprintf("e2e_%s_%d_%d", short, time.Now().UnixNano()%1e12, nameSeq.Add(1))
	testbed.Exec(t, admin,
		`CREATE SCHEMA `+name,
		`CREATE TABLE `+name+`.outbox (id bigserial PRIMARY KEY, aggregatetype text NOT NULL, aggregateid text NOT NULL, type text NOT NULL DEFAULT 'e', payload jsonb)`,
		`CREATE TABLE `+name+`.other (id bigserial PRIMARY KEY, junk text)`,
		`CREATE PUBLICATION `+name+` FOR TABLE `+name+`.outbox, `+name+`.other`,
		`GRANT USAGE ON SCHEMA `+name+` TO debezium`,
		`GRANT SELECT ON ALL TABLES IN SCHEMA `+name+` TO debezium`,
	)
	f := &fixture{admin: admin, name: name}
	t.Cleanup(func() {
		ctx := context.Background()
		for i := 0; i < 100; i++ { // the walsender may take a moment to exit
			var n int
			// The slot and the marker of an unfinished initial snapshot.
			err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_replication_slots WHERE slot_name IN ($1, $2)`, name, replication.SnapshotMarker(name)).Scan(&n)
			if err == nil && n == 0 {
				break
			}
			_, _ = admin.Exec(ctx, `SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name IN ($1, $2) AND NOT active`, name, replication.SnapshotMarker(name))
			time.Sleep(100 * time.Millisecond)
		}
		_, _ = admin.Exec(ctx, `DROP PUBLICATION IF EXISTS `+name)
		_, _ = admin.Exec(ctx, `DROP SCHEMA IF EXISTS `+name+` CASCADE`)
		deleteTopics(t, name+".")
	})
	return f
}

// topic is the topic the relay routes aggregate type aggType to.
func (f *fixture) topic(aggType string) string { return f.name + "." + aggType }

// connectorOverrides point a connector file at the fixture (the bed's
// address, the fixture's slot, publication and events_outbox table), with
// extra on top.
func (f *fixture) connectorOverrides(t *testing.T, extra map[string]any) map[string]any {
	t.Helper()
	host, port := testbed.PostgresHostPort(t)
	o := map[string]any{
		"database.hostname": host, "database.port": strconv.Itoa(port), "database.sslmode": "disable",
		"slot.name": f.name, "publication.name": f.name, "table.include.list": f.name + ".events_outbox",
		"status.update.interval.ms": "1000",
	}
	for k, v := range extra {
		o[k] = v
	}
	return o
}

// config writes a connector JSON for this namespace, as a user would write
// it for Kafka Connect, with overrides applied, and returns its path.
func (f *fixture) config(t *testing.T, overrides map[string]string) string {
	t.Helper()
	host, port := testbed.PostgresHostPort(t)
	c := map[string]string{
		"connector.class":                             "io.debezium.connector.postgresql.PostgresConnector",
		"tasks.max":                                   "1",
		"database.hostname":                           host,
		"database.port":                               strconv.Itoa(port),
		"database.user":                               "debezium",
		"database.password":                           "debezium@123",
		"database.dbname":                             "order_db",
		"database.sslmode":                            "disable",
		"plugin.name":                                 "pgoutput",
		"slot.name":                                   f.name,
		"publication.name":                            f.name,
		"publication.autocreate.mode":                 "disabled",
		"table.include.list":                          f.name + `\.outbox`,
		"snapshot.mode":                               "no_data",
		"topic.prefix":                                f.name,
		"status.update.interval.ms":                   "1000",
		"topic.creation.default.partitions":           "1",
		"topic.creation.default.replication.factor":   "1",
		"transforms":                                  "outbox",
		"transforms.outbox.type":                      "io.debezium.transforms.outbox.EventRouter",
		"transforms.outbox.route.by.field":            "aggregatetype",
		"transforms.outbox.route.topic.replacement":   f.name + ".${routedByValue}",
		"transforms.outbox.table.expand.json.payload": "true",
	}
	for k, v := range overrides {
		c[k] = v
	}
	doc := map[string]any{"name": f.name, "config": c}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "connector.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// connect opens another superuser connection, for a goroutine or a second
// transaction; closed at the end of the test.
func connect(t *testing.T) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, testbed.Postgres(t))
	if err != nil {
		t.Fatalf("connecting to PostgreSQL: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// insertIDs runs an INSERT … RETURNING id and returns the ids.
func insertIDs(t *testing.T, conn *pgx.Conn, sql string, args ...any) []int64 {
	t.Helper()
	ids, err := queryIDs(context.Background(), conn, sql, args...)
	if err != nil {
		t.Fatalf("%s: %v", firstLine(sql), err)
	}
	return ids
}

func queryIDs(ctx context.Context, conn *pgx.Conn, sql string, args ...any) ([]int64, error) {
	rows, err := conn.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// walLSN returns pg_current_wal_lsn().
func walLSN(t *testing.T, conn *pgx.Conn) capture.LSN {
	t.Helper()
	var lsn uint64
	if err := conn.QueryRow(context.Background(), `SELECT (pg_current_wal_lsn() - '0/0')::bigint`).Scan(&lsn); err != nil {
		t.Fatalf("reading pg_current_wal_lsn: %v", err)
	}
	return capture.LSN(lsn)
}

// confirmedFlush returns the slot's confirmed_flush_lsn.
func confirmedFlush(t *testing.T, conn *pgx.Conn, slot string) capture.LSN {
	t.Helper()
	return capture.LSN(testbed.ConfirmedFlush(t, conn, slot))
}

// waitStreaming waits until the relay streams from the fixture's slot: a
// walsender holds it and its confirmed_flush_lsn is set. testbed's
// WaitSlotActive is not enough for a new slot: the slot is active while
// CREATE_REPLICATION_SLOT still waits for running transactions to end, and
// a row committed in that window lies before the slot's consistent point,
// so no_data rightly never sends it.
func (f *fixture) waitStreaming(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var ok bool
		err := f.admin.QueryRow(context.Background(), `SELECT active AND confirmed_flush_lsn IS NOT NULL FROM pg_replication_slots WHERE slot_name = $1`, f.name).Scan(&ok)
		if err == nil && ok {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the relay is not streaming from slot %s after 30 s; %s", f.name, f.slotState(t))
}

// waitSlotInactive waits until no walsender streams from the slot, so its
// confirmed_flush_lsn is final.
func waitSlotInactive(t *testing.T, conn *pgx.Conn, slot string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		var active bool
		err := conn.QueryRow(context.Background(), `SELECT active FROM pg_replication_slots WHERE slot_name = $1`, slot).Scan(&active)
		if err == nil && !active {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("slot %s still active after %s", slot, timeout)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

// slotState describes the fixture's slot and its walsender, for a failure
// message: whether the server had sent the missing WAL at all.
func (f *fixture) slotState(t *testing.T) string {
	t.Helper()
	var active bool
	var current string
	var confirmed, sent, flush *string
	err := f.admin.QueryRow(context.Background(), `SELECT r.active, r.confirmed_flush_lsn::text, pg_current_wal_lsn()::text, s.sent_lsn::text, s.flush_lsn::text
		FROM pg_replication_slots r LEFT JOIN pg_stat_replication s ON s.pid = r.active_pid WHERE r.slot_name = $1`, f.name).Scan(&active, &confirmed, &current, &sent, &flush)
	if err != nil {
		return fmt.Sprintf("slot %s: %v", f.name, err)
	}
	deref := func(p *string) string {
		if p == nil {
			return "-"
		}
		return *p
	}
	return fmt.Sprintf("slot %s: active=%t confirmed_flush_lsn=%s; walsender sent_lsn=%s flush_lsn=%s; pg_current_wal_lsn=%s",
		f.name, active, deref(confirmed), deref(sent), deref(flush), current)
}
