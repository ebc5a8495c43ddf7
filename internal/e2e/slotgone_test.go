package e2e_test

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestSlotDroppedWhileStopped pins the loss users of log-based CDC report
// most: the slot dropped (by hand, by an HA tool, lost in a failover) while
// the relay was down used to be created again at the server's current
// position, and the events committed meanwhile were never published. Now
// the next start stops with ErrSlotGone and the fix; with
// snapshot.mode=when_needed it reads the outbox table again and nothing is
// missing.
func TestSlotDroppedWhileStopped(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "slotgone")
	r := startRelay(t, f.config(t, map[string]string{"snapshot.mode": "no_data"}))
	f.waitStreaming(t)
	first := insertEvents(t, f.admin, f, 10)
	f.consume(t, f.topic("orders"), len(first), 30*time.Second, time.Second)
	time.Sleep(1500 * time.Millisecond) // offset.flush.interval.ms: the position is recorded
	r.stop(t, 20*time.Second)
	waitSlotInactive(t, f.admin, f.name, 20*time.Second)
	if _, err := f.admin.Exec(context.Background(), `SELECT pg_drop_replication_slot($1)`, f.name); err != nil {
		t.Fatal(err)
	}
	missed := insertEvents(t, f.admin, f, 5) // committed while there is no slot

	r = startRelay(t, f.config(t, map[string]string{"snapshot.mode": "no_data"}))
	if code := r.wait(t, 60*time.Second); code != 1 {
		t.Fatalf("the relay exited with code %d on a missing slot with a recorded position; want 1", code)
	}
	for _, want := range []string{"replication slot is gone", `replication slot "` + f.name + `" does not exist`, "snapshot.mode=when_needed", "offsets topic outboxrelay-offsets"} {
		if !strings.Contains(r.log(), want) {
			t.Errorf("the error does not say %q; log:\n%s", want, r.logTail(10))
		}
	}
	if n := countSlots(t, f); n != 0 {
		t.Fatalf("%d slots named %s after the refusal; want none created", n, f.name)
	}

	// snapshot.mode=when_needed: the table is read again, then streamed.
	startRelay(t, f.config(t, map[string]string{"snapshot.mode": "when_needed"}))
	later := insertEvents(t, f.admin, f, 3)
	want := append(append(append([]int64{}, first...), missed...), later...)
	recs := f.consume(t, f.topic("orders"), len(first)+len(want), 60*time.Second, 2*time.Second)
	seen := countIDs(recs)
	for _, id := range want {
		if seen[id] == 0 {
			t.Errorf("event %d missing after the re-read with snapshot.mode=when_needed", id)
		}
	}
	t.Logf("%d records for %d events: the 10 published before the slot was dropped came again with the re-read", len(recs), len(want))
}

func countSlots(t *testing.T, f *fixture) int {
	t.Helper()
	var n int
	if err := f.admin.QueryRow(context.Background(), `SELECT count(*) FROM pg_replication_slots WHERE slot_name = $1`, f.name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
