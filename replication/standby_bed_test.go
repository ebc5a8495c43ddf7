package replication_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
	"github.com/outboxrelay/outboxrelay/replication"
)

// TestReadReplay: on PostgreSQL 16, 17 and 18, what the lock watcher
// samples on a hot standby (the outboxrelay_standby_* series): nothing on
// a primary; 0 lag once the standby replayed everything; bytes and seconds
// above 0 while replay is paused and the primary commits, 0 again after
// it resumed; the slot's invalidation by the server once wal_level is
// lowered on the primary, named as 16 (conflicting) and 17+
// (invalidation_reason) say it. Before, a paused replay showed in no
// series of the relay: its own lag stays 0 while nothing reaches the slot.
func TestReadReplay(t *testing.T) { testbed.EachStandbyMajor(t, testReadReplay) }

func testReadReplay(t *testing.T, major int) {
	p := testbed.StartStandbyPair(t, major, "", "")
	primary, standby := p.Connect(t, p.Primary), p.Connect(t, p.Standby)
	const slot = "replay_sample"
	read := func(conn *pgx.Conn) replication.StandbyReplay {
		t.Helper()
		r, err := replication.ReadReplay(context.Background(), conn, slot)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := read(primary); r != (replication.StandbyReplay{}) {
		t.Errorf("on the primary: %+v; want all zero", r)
	}
	stop := p.LogStandbySnapshots(t)
	testbed.Exec(t, standby, `SELECT pg_create_logical_replication_slot('`+slot+`', 'pgoutput')`)
	stop()
	// A replayed commit, so that pg_last_xact_replay_timestamp() is set.
	testbed.Exec(t, primary, `CREATE TABLE t (id int PRIMARY KEY)`)
	p.WaitReplayed(t, primary, standby, 30*time.Second)
	var r replication.StandbyReplay
	testbed.WaitFor(t, "no replay lag on the caught-up standby", 10*time.Second, func() bool { r = read(standby); return r.LagBytes == 0 })
	if !r.InRecovery || r.LagSeconds != 0 || r.SlotInvalidated != "" {
		t.Errorf("caught up: %+v; want in recovery, 0 s, the slot valid", r)
	}

	p.PauseReplay(t, standby)
	testbed.Exec(t, primary, `INSERT INTO t SELECT generate_series(1, 1000)`)
	testbed.WaitFor(t, "replay lag while replay is paused", 10*time.Second, func() bool { r = read(standby); return r.LagBytes > 0 && r.LagSeconds > 0 })
	t.Logf("PostgreSQL %d, replay paused: %+v", major, r)
	p.ResumeReplay(t, standby)
	p.WaitReplayed(t, primary, standby, 30*time.Second)
	testbed.WaitFor(t, "no replay lag after the resume", 10*time.Second, func() bool { r = read(standby); return r.LagBytes == 0 && r.LagSeconds == 0 })

	testbed.Exec(t, primary, `ALTER SYSTEM SET wal_level = replica`)
	p.Primary.Restart(t)
	want := "wal_level_insufficient"
	if major == 16 {
		want = "conflicting with recovery"
	}
	testbed.WaitFor(t, "the slot invalidated on the standby", 30*time.Second, func() bool { r = read(standby); return r.SlotInvalidated != "" })
	if r.SlotInvalidated != want {
		t.Errorf("PostgreSQL %d: the slot invalidated as %q; want %q", major, r.SlotInvalidated, want)
	}
}
