package testbed_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
)

// TestStandbyPair: on every major a standby hosts logical slots on (16+),
// the pair made by a low-level base backup replicates, its replay pauses
// and resumes, a logical slot is created on the standby within 5 s while
// pg_log_standby_snapshot() runs on the idle primary, and the promoted
// standby takes writes.
func TestStandbyPair(t *testing.T) {
	testbed.EachStandbyMajor(t, func(t *testing.T, major int) {
		p := testbed.StartStandbyPair(t, major, "", "")
		primary, standby := p.Connect(t, p.Primary), p.Connect(t, p.Standby)
		var version int
		if err := standby.QueryRow(context.Background(), `SELECT current_setting('server_version_num')::int / 10000`).Scan(&version); err != nil || version != major {
			t.Fatalf("the standby runs PostgreSQL %d (%v); want %d", version, err, major)
		}
		testbed.Exec(t, primary, `CREATE TABLE t (id int PRIMARY KEY)`, `INSERT INTO t SELECT generate_series(1, 100)`)
		p.WaitReplayed(t, primary, standby, 30*time.Second)
		if n := count(t, standby); n != 100 {
			t.Fatalf("the standby has %d rows; want 100", n)
		}

		p.PauseReplay(t, standby)
		testbed.Exec(t, primary, `INSERT INTO t SELECT generate_series(101, 200)`)
		time.Sleep(500 * time.Millisecond)
		if n := count(t, standby); n != 100 {
			t.Fatalf("replay paused: the standby has %d rows; want still 100", n)
		}
		p.ResumeReplay(t, standby)
		p.WaitReplayed(t, primary, standby, 30*time.Second)
		if n := count(t, standby); n != 200 {
			t.Fatalf("replay resumed: the standby has %d rows; want 200", n)
		}

		stop := p.LogStandbySnapshots(t)
		start := time.Now()
		testbed.Exec(t, standby, `SELECT pg_create_logical_replication_slot('on_standby', 'pgoutput')`)
		took := time.Since(start)
		stop()
		t.Logf("PostgreSQL %d: a logical slot created on the standby in %s, pg_log_standby_snapshot() every 200 ms on the idle primary", major, took.Round(time.Millisecond))
		if took > 5*time.Second {
			t.Errorf("creating a logical slot on the standby took %s; want under 5 s", took)
		}

		p.Promote(t)
		testbed.Exec(t, standby, `INSERT INTO t VALUES (201)`)
		if n := count(t, standby); n != 201 {
			t.Fatalf("promoted: %d rows; want 201", n)
		}
	})
}

func count(t *testing.T, conn *pgx.Conn) int {
	t.Helper()
	var n int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM t`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
