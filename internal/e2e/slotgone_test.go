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
	// Issue 25: check predicts the start, and agrees with run.
	if out, code := runCheck(t, f.config(t, map[string]string{"snapshot.mode": "no_data"})); code != 0 || !strings.Contains(out, "✓ start: resume at ") || !strings.Contains(out, "written by outboxrelay") {
		t.Errorf("check on the stopped relay's slot exited %d; want 0 with \"✓ start: resume at …\" and the position's writer:\n%s", code, out)
	}
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
	// Regression (issue 25): check said "✓ replication slot …: does not
	// exist yet; the relay creates it" while run refused to start.
	out, code := runCheck(t, f.config(t, map[string]string{"snapshot.mode": "no_data"}))
	for _, want := range []string{"✗ start: run would refuse to start", "replication slot is gone", "delivered every event up to", "recorded by outboxrelay in offsets topic", "snapshot.mode=when_needed"} {
		if code != 1 || !strings.Contains(out, want) {
			t.Errorf("check on a gone slot with a recorded position exited %d; want 1 and %q:\n%s", code, want, out)
		}
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
