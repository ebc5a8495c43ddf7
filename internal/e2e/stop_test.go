package e2e_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
)

// Both tests run a steady load of about 1,000 events/s in transactions of
// 10 rows, stop the relay mid-load, restart it while the load goes on, and
// then check every event by its id.
const (
	loadRowsPerTx = 10
	loadTick      = 10 * time.Millisecond
)

// interruptUnderLoad starts the relay, starts the load, lets both run for
// 2 s, calls interrupt with the relay, restarts the relay on the same
// config while the load goes on, stops the load after 1.5 s more and
// returns its transactions and every record on the topic.
func interruptUnderLoad(t *testing.T, f *fixture, interrupt func(*relayProc)) ([]loadTx, []record) {
	t.Helper()
	cfg := f.config(t, nil)
	r := startRelay(t, cfg)
	testbed.WaitSlotActive(t, f.admin, f.name, 30*time.Second)

	l := startLoad(t, f, loadRowsPerTx, loadTick)
	time.Sleep(2 * time.Second)
	interrupt(r)

	startRelay(t, cfg)
	testbed.WaitSlotActive(t, f.admin, f.name, 30*time.Second)
	time.Sleep(1500 * time.Millisecond)
	txs := l.finish(t)
	n := 0
	for _, tx := range txs {
		n += len(tx.ids)
	}
	return txs, consume(t, f.topic("orders"), n, 60*time.Second, 2*time.Second)
}

// TestSIGTERMUnderLoadThenRestart: SIGTERM mid-load ends the relay with
// exit code 0 within a few seconds, and after a restart every event has
// arrived exactly once.
func TestSIGTERMUnderLoadThenRestart(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "term")
	var took time.Duration
	var confirmed pglogrepl.LSN
	txs, recs := interruptUnderLoad(t, f, func(r *relayProc) {
		took = r.stop(t, 5*time.Second)
		confirmed = confirmedFlush(t, f.admin, f.name)
	})
	want := loadIDs(txs)
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
	var confirmed pglogrepl.LSN
	txs, recs := interruptUnderLoad(t, f, func(r *relayProc) {
		r.signal(t, syscall.SIGKILL)
		if code := r.wait(t, 5*time.Second); code != -1 {
			t.Fatalf("relay exit code %d after SIGKILL; want -1 (killed)", code)
		}
		waitSlotInactive(t, f.admin, f.name, 10*time.Second)
		confirmed = confirmedFlush(t, f.admin, f.name)
	})
	want := loadIDs(txs)
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
