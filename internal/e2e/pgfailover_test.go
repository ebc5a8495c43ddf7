package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxrelay/outboxrelay/internal/kafkaread"
	"github.com/outboxrelay/outboxrelay/internal/testbed"
)

// A primary and a physical standby that synchronizes failover slots
// (PostgreSQL 17+): the standby is made by a low-level base backup through
// SQL, streams from a physical slot the primary lists in
// synchronized_standby_slots, and runs with sync_replication_slots = on.
type pgPair struct {
	primary, standby testbed.PrivateCluster
}

const standbySlot = "standby1"

func startPair(t *testing.T) pgPair {
	t.Helper()
	if v, _ := strconv.Atoi(os.Getenv(testbed.EnvPostgresVersion)); v < 17 {
		t.Skipf("skipping: failover slots need PostgreSQL 17+; the bed runs %q (%s)", os.Getenv(testbed.EnvPostgresVersion), testbed.EnvPostgresVersion)
	}
	p := pgPair{primary: testbed.StartPrivateCluster(t, "wal_level = logical\nmax_wal_senders = 10\nmax_replication_slots = 10\nwal_keep_size = '128MB'")}
	admin := pairConn(t, p.primary.Port)
	pgExec(t, admin, `SELECT pg_create_physical_replication_slot('`+standbySlot+`', true)`,
		`ALTER SYSTEM SET synchronized_standby_slots = '`+standbySlot+`'`, `SELECT pg_reload_conf()`)
	p.standby = testbed.BaseBackup(t, p.primary, admin)
	// The copy of the primary's synchronized_standby_slots would make the
	// promoted standby's walsenders wait for a standby it does not have.
	conf := fmt.Sprintf("primary_conninfo = 'host=127.0.0.1 port=%d user=postgres dbname=postgres application_name=standby1'\n"+
		"primary_slot_name = '%s'\nhot_standby = on\nhot_standby_feedback = on\nsync_replication_slots = on\nsynchronized_standby_slots = ''\n", p.primary.Port, standbySlot)
	testbed.AppendFile(t, filepath.Join(p.standby.Data, "postgresql.auto.conf"), conf)
	testbed.AppendFile(t, filepath.Join(p.standby.Data, "standby.signal"), "")
	p.standby.Port = p.standby.Start(t)
	waitFor(t, "the standby to stream from the primary", 60*time.Second, func() bool {
		var n int
		_ = admin.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_replication WHERE application_name = 'standby1' AND state = 'streaming'`).Scan(&n)
		return n == 1
	})
	return p
}

func pairConn(t *testing.T, port int) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func pgExec(t *testing.T, conn *pgx.Conn, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := conn.Exec(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	testbed.WaitFor(t, what, timeout, cond)
}

// pairConfig writes the relay's connector file for the pair: both hosts,
// the primary first.
func (p pgPair) config(t *testing.T, name string, extra map[string]string) string {
	t.Helper()
	c := map[string]string{
		"connector.class":   "io.debezium.connector.postgresql.PostgresConnector",
		"database.hostname": "127.0.0.1,127.0.0.1", "database.port": fmt.Sprintf("%d,%d", p.primary.Port, p.standby.Port),
		"database.user": "postgres", "database.dbname": "postgres", "database.sslmode": "disable", "plugin.name": "pgoutput",
		"slot.name": name, "publication.name": name, "publication.autocreate.mode": "disabled",
		"table.include.list": `public\.outbox`, "snapshot.mode": "no_data", "topic.prefix": name,
		"offsets.storage.topic": "offsets." + name, "status.update.interval.ms": "1000",
		"slot.max.retries": "3", "slot.retry.delay.ms": "500", "retriable.restart.connector.wait.ms": "1000",
		"topic.creation.default.partitions": "1", "topic.creation.default.replication.factor": "1",
		"transforms": "outbox", "transforms.outbox.type": "io.debezium.transforms.outbox.EventRouter",
		"transforms.outbox.route.by.field": "aggregatetype", "transforms.outbox.route.topic.replacement": name + ".${routedByValue}",
	}
	for k, v := range extra {
		c[k] = v
	}
	b, err := json.Marshal(map[string]any{"name": name, "config": c})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "connector.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// outbox creates the outbox table and the publication on the primary; both
// reach the standby through the WAL.
func (p pgPair) outbox(t *testing.T, admin *pgx.Conn, name string) {
	pgExec(t, admin, `CREATE TABLE IF NOT EXISTS public.outbox (id bigserial PRIMARY KEY, aggregatetype text NOT NULL, aggregateid text NOT NULL, payload jsonb)`,
		`CREATE PUBLICATION `+name+` FOR TABLE public.outbox`)
}

// loadPrimary inserts 10 rows a transaction every 10 ms (1,000 events/s) into
// the primary until it fails (the primary is killed) or stop is closed,
// and returns the ids of the committed rows.
func loadPrimary(admin *pgx.Conn, stop <-chan struct{}) (ids func() []int64) {
	var mu sync.Mutex
	var got []int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			rows, err := queryIDs(context.Background(), admin, `INSERT INTO public.outbox (aggregatetype, aggregateid, payload)
				SELECT 'orders', 'agg-' || (g % 100), jsonb_build_object('g', g) FROM generate_series($1::int, $1::int + 9) g RETURNING id`, i*10)
			if err != nil {
				return
			}
			mu.Lock()
			got = append(got, rows...)
			mu.Unlock()
		}
	}()
	return func() []int64 {
		<-done
		mu.Lock()
		defer mu.Unlock()
		return got
	}
}

// killPrimary SIGKILLs the primary's postmaster, as a crashed host.
func (p pgPair) killPrimary(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(p.primary.Data, "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
}

func (p pgPair) promote(t *testing.T) time.Time {
	t.Helper()
	testbed.AsPostgres(t, filepath.Join(p.standby.Bin, "pg_ctl"), "-D", p.standby.Data, "-w", "-t", "60", "promote")
	return time.Now()
}

// missing reads every id of the outbox on conn and the topic, and returns
// the ids not in the topic and the count of records.
func missing(t *testing.T, conn *pgx.Conn, topic string, timeout time.Duration) (miss []int64, records int) {
	t.Helper()
	ids, err := queryIDs(context.Background(), conn, `SELECT id FROM public.outbox ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	r := kafkaread.Reader{Broker: testbed.KafkaBrokers(t)}
	var seen map[int64]int
	deadline := time.Now().Add(timeout)
	for {
		msgs, err := r.Topic(context.Background(), topic)
		if err != nil {
			t.Fatalf("reading %s: %v", topic, err)
		}
		recs := make([]record, 0, len(msgs))
		for _, m := range msgs {
			rec, err := toRecord(m)
			if err != nil {
				t.Fatal(err)
			}
			recs = append(recs, rec)
		}
		seen, records = countIDs(recs), len(recs)
		miss = miss[:0]
		for _, id := range ids {
			if seen[id] == 0 {
				miss = append(miss, id)
			}
		}
		if len(miss) == 0 || time.Now().After(deadline) {
			return miss, records
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// TestFailoverSynchronizedSlot: a relay with slot.failover=true and both
// hosts in database.hostname streams 1,000 events/s from the primary; the
// primary is SIGKILLed and the standby promoted. The relay finds the new
// primary and resumes from the synchronized slot: nothing missing.
// Before, with no failover slot, the relay created a new slot on the new
// primary and skipped what was committed in between.
func TestFailoverSynchronizedSlot(t *testing.T) {
	p := startPair(t)
	admin := pairConn(t, p.primary.Port)
	name := fmt.Sprintf("fo_%d", time.Now().UnixNano()%1e9)
	p.outbox(t, admin, name)
	cfg := p.config(t, name, map[string]string{"slot.failover": "true"})
	r := startRelay(t, cfg)
	standby := pairConn(t, p.standby.Port)
	waitFor(t, "the standby's synchronized copy of the slot", 90*time.Second, func() bool {
		var synced bool
		_ = standby.QueryRow(context.Background(), `SELECT synced FROM pg_replication_slots WHERE slot_name = $1`, name).Scan(&synced)
		return synced
	})
	out, code := runCheck(t, cfg)
	if code != 0 || strings.Contains(out, "✗") {
		t.Errorf("check on the failover pair: exit %d\n%s", code, out)
	}
	slotLSN := func(conn *pgx.Conn) (lsn uint64) {
		_ = conn.QueryRow(context.Background(), `SELECT (confirmed_flush_lsn - '0/0')::bigint FROM pg_replication_slots WHERE slot_name = $1`, name).Scan(&lsn)
		return lsn
	}
	watch := pairConn(t, p.primary.Port) // admin is the loader's from here on
	stop := make(chan struct{})
	ids := loadPrimary(admin, stop)
	time.Sleep(3 * time.Second)
	// Slot synchronization is asynchronous: let the copy pass a position
	// of the load, so that the failover happens with synchronization
	// running, as in production.
	mark := slotLSN(watch)
	waitFor(t, "the standby's copy of the slot to follow the load", 90*time.Second, func() bool { return slotLSN(standby) >= mark })
	confirmedAtKill, copyAtKill := slotLSN(watch), slotLSN(standby)
	p.killPrimary(t)
	committed := ids()
	promoted := p.promote(t)
	waitFor(t, "the relay to stream from the promoted standby", 90*time.Second, func() bool {
		var active bool
		_ = standby.QueryRow(context.Background(), `SELECT active FROM pg_replication_slots WHERE slot_name = $1`, name).Scan(&active)
		return active
	})
	took := time.Since(promoted)
	after := loadPrimary(standby, stop)
	time.Sleep(time.Second)
	close(stop)
	after()
	miss, records := missing(t, standby, name+".orders", 60*time.Second)
	var rows int
	_ = standby.QueryRow(context.Background(), `SELECT count(*) FROM public.outbox`).Scan(&rows)
	t.Logf("%d rows committed on the old primary before its kill, %d rows on the new primary; %d records, %d sent twice: the standby's copy of the slot was %d bytes behind the old primary's confirmed position at the kill, and the stream resumes from the copy; streaming again %s after the promotion",
		len(committed), rows, records, records-rows, int64(confirmedAtKill)-int64(copyAtKill), took.Round(10*time.Millisecond))
	if len(miss) > 0 {
		t.Errorf("%d events missing after the failover, e.g. %v\nrelay log:\n%s", len(miss), miss[:min(len(miss), 10)], r.logTail(30))
	}
	// And as a user checks it: outboxrelay verify, through the host list
	// (the old primary is gone), ordered by the id the one loader made.
	report, err := osexec.Command(relayBinary, "verify", "--config", cfg, "--kafka-brokers", testbed.KafkaBrokers(t), "--order-by", "id", "--timeout", "2m").CombinedOutput()
	t.Logf("outboxrelay verify after the failover:\n%s", report)
	if err != nil {
		t.Errorf("outboxrelay verify after the failover: %v", err)
	}
}

// TestFailoverWithoutFailoverSlot: the same failover with slot.failover
// off. The new primary has no slot: the relay stops with ErrSlotGone
// instead of creating one that skips events; with
// snapshot.mode=when_needed it reads the table again and nothing is
// missing.
func TestFailoverWithoutFailoverSlot(t *testing.T) {
	p := startPair(t)
	admin := pairConn(t, p.primary.Port)
	name := fmt.Sprintf("nofo_%d", time.Now().UnixNano()%1e9)
	p.outbox(t, admin, name)
	// With slot synchronization off on the standby, check (asked about
	// slot.failover) says so and how to fix it.
	standby := pairConn(t, p.standby.Port)
	pgExec(t, standby, `ALTER SYSTEM SET sync_replication_slots = off`, `SELECT pg_reload_conf()`)
	time.Sleep(500 * time.Millisecond)
	out, code := runCheck(t, p.config(t, name, map[string]string{"slot.failover": "true"}))
	want := fmt.Sprintf("✗ standby 127.0.0.1:%d/postgres sync_replication_slots: off\n    fix: ALTER SYSTEM SET sync_replication_slots = on; SELECT pg_reload_conf();", p.standby.Port)
	if code == 0 || !strings.Contains(out, want) {
		t.Errorf("check with sync_replication_slots off on the standby: exit %d; want the line\n%s\nin:\n%s", code, want, out)
	}
	cfg := p.config(t, name, nil)
	r := startRelay(t, cfg)
	waitFor(t, "the relay to stream", 60*time.Second, func() bool {
		var active bool
		_ = admin.QueryRow(context.Background(), `SELECT active FROM pg_replication_slots WHERE slot_name = $1`, name).Scan(&active)
		return active
	})
	stop := make(chan struct{})
	ids := loadPrimary(admin, stop)
	time.Sleep(3 * time.Second)
	p.killPrimary(t)
	ids()
	p.promote(t)
	code = r.wait(t, 120*time.Second)
	if code != 1 || !strings.Contains(r.log(), "replication slot is gone") {
		t.Fatalf("after a failover to a server without the slot the relay exited %d; want 1 with ErrSlotGone; log:\n%s", code, r.logTail(20))
	}
	if n := 0; standby.QueryRow(context.Background(), `SELECT count(*) FROM pg_replication_slots WHERE slot_name = $1`, name).Scan(&n) == nil && n != 0 {
		t.Fatalf("a slot %s was created on the new primary; want none", name)
	}
	startRelay(t, p.config(t, name, map[string]string{"snapshot.mode": "when_needed"}))
	close(stop)
	if miss, records := missing(t, standby, name+".orders", 90*time.Second); len(miss) > 0 {
		t.Errorf("%d events missing after the re-read (%d records), e.g. %v", len(miss), records, miss[:min(len(miss), 10)])
	}
}
