package e2e_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
)

// Both tests run a steady load of about 1,000 events/s in transactions of
// 10 rows, stop the relay mid-load, restart it while the load goes on, and
// then check every event by its id.
const (
	loadRowsPerTx = 10
	loadTick      = 10 * time.Millisecond
)

// TestSIGTERMUnderLoadThenRestart: SIGTERM mid-load ends the relay with
// exit code 0 within a few seconds, and after a restart every event has
// arrived exactly once.
func TestSIGTERMUnderLoadThenRestart(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "term")
	cfg := f.config(t, nil)
	r1 := startRelay(t, cfg)
	testbed.WaitSlotActive(t, f.admin, f.name, 30*time.Second)

	l := startLoad(t, f, loadRowsPerTx, loadTick)
	time.Sleep(2 * time.Second)
	took := r1.stop(t, 5*time.Second)
	confirmed := confirmedFlush(t, f.admin, f.name)

	startRelay(t, cfg)
	testbed.WaitSlotActive(t, f.admin, f.name, 30*time.Second)
	time.Sleep(1500 * time.Millisecond)
	txs := l.finish(t)
	want := loadIDs(txs)

	recs := consume(t, f.topic("orders"), len(want), 60*time.Second, 2*time.Second)
	counts := countIDs(recs)
	missing, dups := 0, 0
	for _, id := range want {
		switch n := counts[id]; {
		case n == 0:
			missing++
		case n > 1:
			dups += n - 1
		}
	}
	if len(counts) != len(want) {
		t.Errorf("%d distinct ids arrived, %d were inserted", len(counts), len(want))
	}
	t.Logf("SIGTERM: exit 0 after %s (slot confirmed %s); %d events in %d transactions; %d records: %d missing, %d duplicates",
		took.Round(time.Millisecond), confirmed, len(want), len(txs), len(recs), missing, dups)
	if missing != 0 || dups != 0 {
		t.Errorf("after SIGTERM and restart: %d missing, %d duplicates; want none", missing, dups)
	}
}

// TestSIGKILLUnderLoadThenRestart: after kill -9 mid-load and a restart no
// event is missing, and only transactions past the slot's last confirmed
// LSN are sent again (at-least-once, never skipping ahead).
func TestSIGKILLUnderLoadThenRestart(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "kill")
	cfg := f.config(t, nil)
	r1 := startRelay(t, cfg)
	testbed.WaitSlotActive(t, f.admin, f.name, 30*time.Second)

	l := startLoad(t, f, loadRowsPerTx, loadTick)
	time.Sleep(2 * time.Second)
	r1.signal(t, syscall.SIGKILL)
	if code := r1.wait(t, 5*time.Second); code != -1 {
		t.Fatalf("relay exit code %d after SIGKILL; want -1 (killed)", code)
	}
	waitSlotInactive(t, f.admin, f.name, 10*time.Second)
	confirmed := confirmedFlush(t, f.admin, f.name)

	startRelay(t, cfg)
	testbed.WaitSlotActive(t, f.admin, f.name, 30*time.Second)
	time.Sleep(1500 * time.Millisecond)
	txs := l.finish(t)
	want := loadIDs(txs)

	recs := consume(t, f.topic("orders"), len(want), 60*time.Second, 2*time.Second)
	counts := countIDs(recs)
	missing, dups, dupTxs, early := 0, 0, 0, 0
	for _, tx := range txs {
		txDup := false
		for _, id := range tx.ids {
			switch n := counts[id]; {
			case n == 0:
				missing++
			case n > 1:
				dups += n - 1
				txDup = true
			}
		}
		if txDup {
			dupTxs++
			// The commit ended at or before lsnAfter; if that is at or
			// before the confirmed LSN, the slot had confirmed it.
			if tx.lsnAfter <= confirmed {
				early++
				if early <= 5 {
					t.Errorf("transaction %v (commit ended by %s) sent again, but the slot had confirmed %s before the kill", tx.ids, tx.lsnAfter, confirmed)
				}
			}
		}
	}
	if len(counts) != len(want) {
		t.Errorf("%d distinct ids arrived, %d were inserted", len(counts), len(want))
	}
	t.Logf("SIGKILL: slot confirmed %s at the kill; %d events in %d transactions; %d records: %d missing, %d duplicates in %d transactions (%d of them at or before the confirmed LSN)",
		confirmed, len(want), len(txs), len(recs), missing, dups, dupTxs, early)
	if missing != 0 {
		t.Errorf("after SIGKILL and restart: %d events missing; want none", missing)
	}
}
