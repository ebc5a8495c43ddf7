package e2e_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
)

// Both tests run a steady load of about 1,000 events/s in transactions of
// 10 rows, stop the relay mid-load and restart it while the load goes on,
// a few times, and then check every event by its id.
const (
	loadRowsPerTx = 10
	loadTick      = 10 * time.Millisecond
)

// interruptUnderLoad starts the relay and the load; then, cycles times,
// lets both run for 1.5 s, calls interrupt with the relay and starts a new
// one on the same config while the load goes on. It stops the load 1.5 s
// after the last restart and returns its transactions and every record on
// the topic.
func interruptUnderLoad(t *testing.T, f *fixture, cycles int, interrupt func(*relayProc)) ([]loadTx, []record) {
	t.Helper()
	cfg := f.config(t, nil)
	r := startRelay(t, cfg)
	testbed.WaitSlotActive(t, f.admin, f.name, 30*time.Second)

	l := startLoad(t, f, loadRowsPerTx, loadTick)
	for range cycles {
		time.Sleep(1500 * time.Millisecond)
		interrupt(r)
		r = startRelay(t, cfg)
		testbed.WaitSlotActive(t, f.admin, f.name, 30*time.Second)
	}
	time.Sleep(1500 * time.Millisecond)
	txs := l.finish(t)
	n := 0
	for _, tx := range txs {
		n += len(tx.ids)
	}
	return txs, f.consume(t, f.topic("orders"), n, 60*time.Second, 2*time.Second)
}

// TestSIGTERMUnderLoadThenRestart: SIGTERM mid-load ends the relay with
// exit code 0 within a few seconds, and after a restart every event has
// arrived exactly once; three times over.
func TestSIGTERMUnderLoadThenRestart(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "term")
	var took []time.Duration
	var confirmed []pglogrepl.LSN
	txs, recs := interruptUnderLoad(t, f, 3, func(r *relayProc) {
		took = append(took, r.stop(t, 5*time.Second).Round(time.Millisecond))
		confirmed = append(confirmed, confirmedFlush(t, f.admin, f.name))
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
	t.Logf("SIGTERM ×%d: exit 0 after %v (slot confirmed %v); %d events in %d transactions; %d records: %d missing, %d duplicates",
		len(took), took, confirmed, len(want), len(txs), len(recs), missing, dups)
	if missing != 0 || dups != 0 {
		t.Errorf("after SIGTERM and restart: %d missing, %d duplicates; want none", missing, dups)
		reportMissing(t, txs, counts, confirmed)
	}
}

// TestSIGKILLUnderLoadThenRestart: after kill -9 mid-load and a restart,
// twice, no event is missing, and only transactions past the slot's
// confirmed LSN at a kill are sent again (at-least-once, never skipping
// ahead): a transaction arrives at most once plus once for each kill whose
// confirmed LSN it was past.
func TestSIGKILLUnderLoadThenRestart(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "kill")
	var confirmed []pglogrepl.LSN
	txs, recs := interruptUnderLoad(t, f, 2, func(r *relayProc) {
		r.signal(t, syscall.SIGKILL)
		if code := r.wait(t, 5*time.Second); code != -1 {
			t.Fatalf("relay exit code %d after SIGKILL; want -1 (killed)", code)
		}
		waitSlotInactive(t, f.admin, f.name, 10*time.Second)
		confirmed = append(confirmed, confirmedFlush(t, f.admin, f.name))
	})
	want := loadIDs(txs)
	counts := countIDs(recs)
	missing, dups, dupTxs, early := 0, 0, 0, 0
	for _, tx := range txs {
		// The commit ended at or before lsnAfter; a kill whose confirmed
		// LSN is at or past lsnAfter had the transaction confirmed.
		allowed := 1
		for _, c := range confirmed {
			if tx.lsnAfter > c {
				allowed++
			}
		}
		most := 0
		for _, id := range tx.ids {
			n := counts[id]
			most = max(most, n)
			switch {
			case n == 0:
				missing++
			case n > 1:
				dups += n - 1
			}
		}
		if most > 1 {
			dupTxs++
		}
		if most > allowed {
			early++
			if early <= 5 {
				t.Errorf("transaction %v (commit ended by %s) arrived %d times; the slot had confirmed %v at the kills, so at most %d",
					tx.ids, tx.lsnAfter, most, confirmed, allowed)
			}
		}
	}
	if len(counts) != len(want) {
		t.Errorf("%d distinct ids arrived, %d were inserted", len(counts), len(want))
	}
	t.Logf("SIGKILL ×%d: slot confirmed %v at the kills; %d events in %d transactions; %d records: %d missing, %d duplicates in %d transactions (%d of them sent again although confirmed)",
		len(confirmed), confirmed, len(want), len(txs), len(recs), missing, dups, dupTxs, early)
	if missing != 0 {
		t.Errorf("after SIGKILL and restart: %d events missing; want none", missing)
		reportMissing(t, txs, counts, confirmed)
	}
}

// reportMissing logs the first transactions with missing events, where
// their commits lie against the confirmed LSNs of the interruptions.
func reportMissing(t *testing.T, txs []loadTx, counts map[int64]int, confirmed []pglogrepl.LSN) {
	t.Helper()
	shown := 0
	for i, tx := range txs {
		lost := 0
		for _, id := range tx.ids {
			if counts[id] == 0 {
				lost++
			}
		}
		if lost == 0 {
			continue
		}
		prev := pglogrepl.LSN(0)
		if i > 0 {
			prev = txs[i-1].lsnAfter
		}
		t.Logf("transaction %d of %d, ids %d..%d: %d of %d events missing; its commit ended in (%s, %s]; confirmed at the interruptions: %v",
			i+1, len(txs), tx.ids[0], tx.ids[len(tx.ids)-1], lost, len(tx.ids), prev, tx.lsnAfter, confirmed)
		if shown++; shown == 10 {
			return
		}
	}
}
