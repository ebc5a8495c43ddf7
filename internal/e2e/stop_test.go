package e2e_test

import (
	"cmp"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/outboxrelay/outboxrelay/internal/testbed"

	"github.com/outboxrelay/outboxrelay/capture"
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
// after the last restart and returns its transactions with those interrupt
// returns (committed by it), in commit order, and every record on the topic.
func interruptUnderLoad(t *testing.T, f *fixture, cycles int, interrupt func(*relayProc) []loadTx) ([]loadTx, []record) {
	t.Helper()
	cfg := f.config(t, nil)
	r := startRelay(t, cfg)
	f.waitStreaming(t)

	l := startLoad(t, f, loadRowsPerTx, loadTick)
	var extra []loadTx
	for range cycles {
		time.Sleep(1500 * time.Millisecond)
		extra = append(extra, interrupt(r)...)
		r = startRelay(t, cfg)
		f.waitStreaming(t)
	}
	time.Sleep(1500 * time.Millisecond)
	txs := append(l.finish(t), extra...)
	slices.SortStableFunc(txs, func(a, b loadTx) int { return cmp.Compare(a.lsnAfter, b.lsnAfter) })
	n := 0
	for _, tx := range txs {
		n += len(tx.ids)
	}
	return txs, f.consume(t, f.topic("orders"), n, 60*time.Second, 2*time.Second)
}

// sigterm stops the relay with SIGTERM, expects exit code 0 within 5 s, and
// checks that the slot got the final status update: once the walsender is
// gone, confirmed_flush_lsn must be what the relay logged as confirmed when
// it stopped. It returns how long the exit took and the slot's LSN.
func sigterm(t *testing.T, f *fixture, r *relayProc) (time.Duration, capture.LSN) {
	t.Helper()
	took := r.stop(t, 5*time.Second).Round(time.Millisecond)
	waitSlotInactive(t, f.admin, f.name, 10*time.Second)
	slot := confirmedFlush(t, f.admin, f.name)
	logged, err := capture.ParseLSN(r.logValue("stream stopped", "confirmed"))
	if err != nil {
		t.Errorf("no `stream stopped confirmed=LSN` line in the relay log: %v", err)
	} else if slot != logged {
		t.Errorf("final status update lost: the relay stopped with confirmed=%s, the slot's confirmed_flush_lsn is %s; the restart sends the difference again", logged, slot)
	}
	return took, slot
}

// checkOnce reports missing and duplicated events of txs in recs.
func checkOnce(t *testing.T, what string, txs []loadTx, recs []record, confirmed []capture.LSN) {
	t.Helper()
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
	t.Logf("%s: %d events in %d transactions; %d records: %d missing, %d duplicates", what, len(want), len(txs), len(recs), missing, dups)
	if missing != 0 || dups != 0 {
		t.Errorf("%s: %d missing, %d duplicates; want none", what, missing, dups)
		reportTxs(t, txs, counts, confirmed)
	}
}

// TestSIGTERMUnderLoadThenRestart: SIGTERM mid-load ends the relay with
// exit code 0 within a few seconds, and after a restart every event has
// arrived exactly once; three times over.
func TestSIGTERMUnderLoadThenRestart(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "term")
	var took []time.Duration
	var confirmed []capture.LSN
	txs, recs := interruptUnderLoad(t, f, 3, func(r *relayProc) []loadTx {
		d, c := sigterm(t, f, r)
		took, confirmed = append(took, d), append(confirmed, c)
		return nil
	})
	t.Logf("SIGTERM ×%d: exit 0 after %v; slot confirmed %v", len(took), took, confirmed)
	checkOnce(t, "after SIGTERM and restart", txs, recs, confirmed)
}

// TestSIGTERMMidTransaction: SIGTERM while the relay is in the middle of
// publishing a 20,000-row transaction (and the walsender in the middle of
// sending it), under the steady load. A clean stop followed by a start
// sends nothing twice (issue 4), so nothing may arrive twice here either.
func TestSIGTERMMidTransaction(t *testing.T) {
	t.Parallel()
	const burst, seen = 20000, 2000
	f := newFixture(t, "termtx")
	var took time.Duration
	var confirmed capture.LSN
	var published int64
	txs, recs := interruptUnderLoad(t, f, 1, func(r *relayProc) []loadTx {
		before := endOffset(t, f.topic("orders"))
		ids := insertIDs(t, f.admin, fmt.Sprintf(`INSERT INTO %s.outbox (aggregatetype, aggregateid, payload)
			SELECT 'orders', 'burst-' || (g %% 20), jsonb_build_object('g', g) FROM generate_series(1, %d) g ORDER BY g RETURNING id`, f.name, burst))
		// SIGTERM once the relay has published part of the burst.
		deadline := time.Now().Add(30 * time.Second)
		for {
			published = endOffset(t, f.topic("orders")) - before
			if published >= seen || time.Now().After(deadline) {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		after := walLSN(t, f.admin)
		took, confirmed = sigterm(t, f, r)
		return []loadTx{{ids: ids, lsnAfter: after}}
	})
	t.Logf("SIGTERM after %d records of the burst and load were published: exit 0 after %s; slot confirmed %s", published, took, confirmed)
	checkOnce(t, "after SIGTERM mid-transaction and restart", txs, recs, []capture.LSN{confirmed})
}

// endOffset is the end offset of a single-partition topic.
func endOffset(t *testing.T, topic string) int64 {
	t.Helper()
	return testbed.EndOffsets(t, topic)[0]
}

// TestSIGKILLUnderLoadThenRestart: after kill -9 mid-load and a restart,
// twice, no event is missing, and only transactions past the slot's
// confirmed LSN at a kill are sent again (at-least-once, never skipping
// ahead): a transaction arrives at most once plus once for each kill whose
// confirmed LSN it was past.
func TestSIGKILLUnderLoadThenRestart(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "kill")
	var confirmed []capture.LSN
	txs, recs := interruptUnderLoad(t, f, 2, func(r *relayProc) []loadTx {
		r.signal(t, syscall.SIGKILL)
		if code := r.wait(t, 5*time.Second); code != -1 {
			t.Fatalf("relay exit code %d after SIGKILL; want -1 (killed)", code)
		}
		waitSlotInactive(t, f.admin, f.name, 10*time.Second)
		confirmed = append(confirmed, confirmedFlush(t, f.admin, f.name))
		return nil
	})
	checkAtLeastOnce(t, "SIGKILL", txs, recs, confirmed)
}

// checkAtLeastOnce asserts what a crash may do: no event missing, and a
// transaction arrives at most once plus once for each crash whose confirmed
// LSN it was past (at-least-once, never skipping ahead). It logs the counts.
func checkAtLeastOnce(t *testing.T, what string, txs []loadTx, recs []record, confirmed []capture.LSN) {
	t.Helper()
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
				t.Errorf("%s: transaction %v (commit ended by %s) arrived %d times; the slot had confirmed %v at the crashes, so at most %d",
					what, tx.ids, tx.lsnAfter, most, confirmed, allowed)
			}
		}
	}
	if len(counts) != len(want) {
		t.Errorf("%s: %d distinct ids arrived, %d were inserted", what, len(counts), len(want))
	}
	t.Logf("%s ×%d: slot confirmed %v at the crashes; %d events in %d transactions; %d records: %d missing, %d duplicates in %d transactions (%d of them sent again although confirmed)",
		what, len(confirmed), confirmed, len(want), len(txs), len(recs), missing, dups, dupTxs, early)
	if missing != 0 {
		t.Errorf("%s: %d events missing; want none", what, missing)
		reportTxs(t, txs, counts, confirmed)
	}
}

// reportTxs logs the first transactions with missing or duplicated
// events, and where their commits lie against the confirmed LSNs of the
// interruptions.
func reportTxs(t *testing.T, txs []loadTx, counts map[int64]int, confirmed []capture.LSN) {
	t.Helper()
	shown := 0
	for i, tx := range txs {
		lost, twice := 0, 0
		for _, id := range tx.ids {
			switch n := counts[id]; {
			case n == 0:
				lost++
			case n > 1:
				twice++
			}
		}
		if lost == 0 && twice == 0 {
			continue
		}
		prev := capture.LSN(0)
		if i > 0 {
			prev = txs[i-1].lsnAfter
		}
		t.Logf("transaction %d of %d, ids %d..%d: %d of %d events missing, %d sent more than once; its commit ended in (%s, %s]; confirmed at the interruptions: %v",
			i+1, len(txs), tx.ids[0], tx.ids[len(tx.ids)-1], lost, len(tx.ids), twice, prev, tx.lsnAfter, confirmed)
		if shown++; shown == 10 {
			return
		}
	}
}
