package replication_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
	"github.com/outboxrelay/outboxrelay/postgres"
	"github.com/outboxrelay/outboxrelay/replication"
)

// TestJanitorDeletesOnlyConfirmed pins logical replication's janitor rule
// (JanitorRule): rows older than
// the retention go only once the slot confirmed past them; younger rows and
// rows the slot has not confirmed stay.
func TestJanitorDeletesOnlyConfirmed(t *testing.T) {
	admin := testbed.Admin(t)
	n := time.Now().UnixNano()
	table, slot := fmt.Sprintf("janitor_%d", n), fmt.Sprintf("janitor_%d", n)
	testbed.Exec(t, admin,
		fmt.Sprintf(`CREATE TABLE public.%s (id bigserial PRIMARY KEY, created_at timestamptz NOT NULL DEFAULT now(), payload text)`, table),
		fmt.Sprintf(`GRANT SELECT, DELETE ON public.%s TO debezium`, table),
		fmt.Sprintf(`SELECT pg_create_logical_replication_slot('%s', 'pgoutput')`, slot),
	)
	t.Cleanup(func() {
		testbed.Exec(t, admin, `DROP TABLE IF EXISTS public.`+table)
		testbed.DropSlot(t, admin, slot)
	})
	// Two old and one young row, all committed after the slot's position.
	testbed.Exec(t, admin, fmt.Sprintf(`INSERT INTO public.%s (created_at, payload) VALUES (now() - interval '1 hour', 'old1'), (now() - interval '1 hour', 'old2'), (now(), 'young')`, table))

	j := testJanitor(t, table, slot, time.Second)
	ctx := context.Background()
	deleted, err := j.Round(ctx)
	if !errors.Is(err, replication.ErrNotConfirmed) || deleted != 0 {
		t.Fatalf("with the slot behind the rows: deleted %d, err %v; want nothing deleted and ErrNotConfirmed", deleted, err)
	}
	if got := countRows(t, admin, table); got != 3 {
		t.Fatalf("%d rows left, want all 3 while the slot has not confirmed them", got)
	}

	// The slot follows the WAL, as under a relay that keeps up.
	stopFollowing := followSlot(admin, slot)
	deleted, err = j.Round(ctx)
	stopFollowing()
	if err != nil || deleted != 2 {
		t.Fatalf("after the slot confirmed the rows: deleted %d, err %v; want the 2 old rows", deleted, err)
	}
	var left string
	if err := admin.QueryRow(ctx, `SELECT string_agg(payload, ',') FROM public.`+table).Scan(&left); err != nil || left != "young" {
		t.Fatalf("rows left %q (%v); want only the young one", left, err)
	}

	// An old row committed after the slot's position stays.
	testbed.Exec(t, admin, fmt.Sprintf(`INSERT INTO public.%s (created_at, payload) VALUES (now() - interval '1 hour', 'old-unconfirmed')`, table))
	if deleted, _ := j.Round(ctx); deleted != 0 || countRows(t, admin, table) != 2 {
		t.Fatalf("deleted %d rows the slot had not confirmed", deleted)
	}
}

// TestJanitorPartitioned: in a partitioned outbox a ctid is unique only
// within a partition. An old row in one partition and a young one in
// another share ctid (0,1); only the old one goes.
func TestJanitorPartitioned(t *testing.T) {
	admin := testbed.Admin(t)
	n := time.Now().UnixNano()
	table, slot := fmt.Sprintf("janitorp_%d", n), fmt.Sprintf("janitorp_%d", n)
	testbed.Exec(t, admin,
		fmt.Sprintf(`CREATE TABLE public.%s (id bigint PRIMARY KEY, created_at timestamptz NOT NULL, payload text) PARTITION BY RANGE (id)`, table),
		fmt.Sprintf(`CREATE TABLE public.%s_1 PARTITION OF public.%s FOR VALUES FROM (1) TO (1000)`, table, table),
		fmt.Sprintf(`CREATE TABLE public.%s_2 PARTITION OF public.%s FOR VALUES FROM (1000) TO (2000)`, table, table),
		fmt.Sprintf(`GRANT SELECT, DELETE ON public.%s TO debezium`, table),
		fmt.Sprintf(`SELECT pg_create_logical_replication_slot('%s', 'pgoutput')`, slot),
		fmt.Sprintf(`INSERT INTO public.%s VALUES (1, now() - interval '1 hour', 'old'), (1000, now(), 'young')`, table),
		fmt.Sprintf(`SELECT pg_replication_slot_advance('%s', pg_current_wal_lsn())`, slot),
	)
	t.Cleanup(func() {
		testbed.Exec(t, admin, `DROP TABLE IF EXISTS public.`+table)
		testbed.DropSlot(t, admin, slot)
	})
	var same bool
	if err := admin.QueryRow(context.Background(), fmt.Sprintf(`SELECT count(DISTINCT ctid) = 1 AND count(*) = 2 FROM public.%s`, table)).Scan(&same); err != nil || !same {
		t.Fatalf("the two rows do not share a ctid (%v); the test needs them to", err)
	}
	j := testJanitor(t, table, slot, 10*time.Second)
	stopFollowing := followSlot(admin, slot)
	deleted, err := j.Round(context.Background())
	stopFollowing()
	var left string
	if qerr := admin.QueryRow(context.Background(), `SELECT coalesce(string_agg(payload, ','), '') FROM public.`+table).Scan(&left); qerr != nil {
		t.Fatal(qerr)
	}
	if err != nil || deleted != 1 || left != "young" {
		t.Fatalf("deleted %d (err %v), left %q; want the old row deleted and the young one kept", deleted, err, left)
	}
}

// testJanitor is a janitor as the relay's debezium role, with a one-minute
// retention on created_at, over public.<table> and the slot.
func testJanitor(t *testing.T, table, slot string, confirmWait time.Duration) *postgres.Janitor {
	t.Helper()
	host, port := testbed.PostgresHostPort(t)
	pcfg, err := replication.ParseConfig(map[string]string{
		"database.hostname": host, "database.port": fmt.Sprint(port), "database.user": "debezium", "database.password": "debezium@123",
		"database.dbname": "order_db", "database.sslmode": "disable", "slot.name": slot, "table.include.list": "public." + table, "topic.prefix": "t",
	})
	if err != nil {
		t.Fatal(err)
	}
	jc := postgres.JanitorConfig{Retention: time.Minute, Column: "created_at", Batch: 1000, Pause: time.Millisecond, ConfirmWait: confirmWait}
	return &postgres.Janitor{
		Cfg: jc, PG: &pcfg.Config, Rule: replication.JanitorRule(&pcfg, jc),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Active: func() bool { return true },
	}
}

// followSlot advances the slot to the WAL's end every 50 ms, as a relay
// that keeps up would, until the returned function is called: other tests
// write WAL meanwhile, so one advance would not do. admin is used only by
// this goroutine until then.
func followSlot(admin *pgx.Conn, slot string) (stop func()) {
	stopping := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			_, _ = admin.Exec(context.Background(), fmt.Sprintf(`SELECT pg_replication_slot_advance('%s', pg_current_wal_lsn())`, slot))
			select {
			case <-stopping:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return func() {
		close(stopping)
		<-stopped
	}
}

func countRows(t *testing.T, admin *pgx.Conn, table string) int {
	t.Helper()
	var n int
	if err := admin.QueryRow(context.Background(), `SELECT count(*) FROM public.`+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestJanitorOnStandby: decoding on a hot standby (PostgreSQL 16, 17, 18),
// the janitor deletes on database.primary.hostname, and only the rows the
// standby's slot confirmed. Before, its DELETE ran on the read-only
// standby and every round failed.
func TestJanitorOnStandby(t *testing.T) {
	for _, major := range testbed.StandbyMajors() {
		t.Run(fmt.Sprintf("pg%d", major), func(t *testing.T) {
			sp := testbed.StartStandbyPair(t, major, "", "")
			primary, standby := sp.Connect(t, sp.Primary), sp.Connect(t, sp.Standby)
			testbed.Exec(t, primary, `CREATE TABLE public.outbox (id bigserial PRIMARY KEY, created_at timestamptz NOT NULL DEFAULT now(), payload text)`)
			sp.WaitReplayed(t, primary, standby, 30*time.Second)
			stop := sp.LogStandbySnapshots(t)
			testbed.Exec(t, standby, `SELECT pg_create_logical_replication_slot('janitor', 'pgoutput')`)
			stop()
			testbed.Exec(t, primary, `INSERT INTO public.outbox (created_at, payload) VALUES (now() - interval '1 hour', 'old1'), (now() - interval '1 hour', 'old2'), (now(), 'young')`)
			sp.WaitReplayed(t, primary, standby, 30*time.Second)

			pcfg, err := replication.ParseConfig(map[string]string{
				"database.hostname": "127.0.0.1", "database.port": fmt.Sprint(sp.Standby.Port),
				"database.primary.hostname": "127.0.0.1", "database.primary.port": fmt.Sprint(sp.Primary.Port),
				"database.user": "postgres", "database.dbname": "postgres", "database.sslmode": "disable",
				"slot.name": "janitor", "table.include.list": "public.outbox", "topic.prefix": "t",
			})
			if err != nil {
				t.Fatal(err)
			}
			jc := postgres.JanitorConfig{Retention: time.Minute, Column: "created_at", Batch: 1000, Pause: time.Millisecond, ConfirmWait: time.Second}
			j := &postgres.Janitor{Cfg: jc, PG: &pcfg.Config, Rule: replication.JanitorRule(&pcfg, jc),
				Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Active: func() bool { return true }}
			ctx := context.Background()
			// i30-review finding 11: this step accepted any error, so a
			// DELETE refused on the read-only standby, or a refused
			// connection to the primary, passed it too.
			deleted, err := j.Round(ctx)
			if !errors.Is(err, replication.ErrNotConfirmed) || strings.Contains(err.Error(), "read-only") || deleted != 0 || countRows(t, primary, "outbox") != 3 {
				t.Fatalf("with the standby's slot behind the rows: deleted %d, err %v; want nothing deleted and ErrNotConfirmed", deleted, err)
			}
			// The slot on the standby follows its replay, as under a relay
			// that keeps up.
			follow := sp.Connect(t, sp.Standby)
			done := make(chan struct{})
			go func() {
				defer close(done)
				for i := 0; i < 40; i++ {
					_, _ = follow.Exec(ctx, `SELECT pg_replication_slot_advance('janitor', pg_last_wal_replay_lsn())`)
					time.Sleep(50 * time.Millisecond)
				}
			}()
			deleted, err = j.Round(ctx)
			<-done
			if err != nil || deleted != 2 {
				t.Fatalf("after the standby's slot confirmed the rows: deleted %d, err %v; want the 2 old rows, on the primary", deleted, err)
			}
			var left string
			if err := primary.QueryRow(ctx, `SELECT string_agg(payload, ',') FROM public.outbox`).Scan(&left); err != nil || left != "young" {
				t.Fatalf("rows left on the primary %q (%v); want only the young one", left, err)
			}
			janitorWrongPrimary(t, major, pcfg, jc, standby)
		})
	}
}

// janitorWrongPrimary: i30-review finding 7. database.primary.hostname
// naming a cluster other than the standby's (a config copied from another
// shard) got the janitor's DELETEs: its rule compared the standby slot's
// position with that cluster's unrelated WAL position, and the slot, far
// ahead of a fresh cluster's WAL, let it delete rows no relay of that
// cluster had published. Now the round refuses, naming both hosts, and
// deletes nothing.
func janitorWrongPrimary(t *testing.T, major int, pcfg replication.Config, jc postgres.JanitorConfig, standby *pgx.Conn) {
	t.Helper()
	other := testbed.StartPrivateClusterOf(t, major, "")
	oc, err := pgx.Connect(context.Background(), other.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { oc.Close(context.Background()) })
	testbed.Exec(t, oc, `CREATE TABLE public.outbox (id bigserial PRIMARY KEY, created_at timestamptz NOT NULL DEFAULT now(), payload text)`,
		`INSERT INTO public.outbox (created_at, payload) VALUES (now() - interval '1 hour', 'other1'), (now() - interval '1 hour', 'other2')`)
	// The standby's slot is past the fresh cluster's WAL: without the
	// check, the rule would let the DELETE through.
	var ahead bool
	var w, c string
	if err := oc.QueryRow(context.Background(), `SELECT pg_current_wal_insert_lsn()::text`).Scan(&w); err != nil {
		t.Fatal(err)
	}
	if err := standby.QueryRow(context.Background(), `SELECT confirmed_flush_lsn::text, confirmed_flush_lsn >= $1::pg_lsn FROM pg_replication_slots WHERE slot_name = 'janitor'`, w).Scan(&c, &ahead); err != nil {
		t.Fatal(err)
	}
	if !ahead {
		t.Fatalf("the standby's slot (%s) is behind the other cluster's WAL (%s): the test would not show the bug", c, w)
	}
	wrong := pcfg
	wrong.PrimaryHost, wrong.PrimaryPort = "127.0.0.1", other.Port
	j := &postgres.Janitor{Cfg: jc, PG: &wrong.Config, Rule: replication.JanitorRule(&wrong, jc),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Active: func() bool { return true }}
	deleted, err := j.Round(context.Background())
	if !errors.Is(err, postgres.ErrNotThePrimary) || deleted != 0 || !strings.Contains(err.Error(), fmt.Sprintf("127.0.0.1:%d", other.Port)) ||
		!strings.Contains(err.Error(), fmt.Sprintf("127.0.0.1:%d", pcfg.Port)) {
		t.Fatalf("janitor with database.primary.hostname of another cluster: deleted %d, err %v; want nothing deleted and ErrNotThePrimary naming both hosts", deleted, err)
	}
	if n := countRows(t, oc, "outbox"); n != 2 {
		t.Fatalf("the other cluster has %d outbox rows left; want both", n)
	}
	t.Logf("PostgreSQL %d: %v", major, err)
}
