package e2e_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/outboxrelay/outboxrelay/internal/testbed"

	"github.com/outboxrelay/outboxrelay/capture"
)

// TestIdleOutboxFollowsWAL: while the outbox stays idle and another table
// of the same publication churns about 50 MB of WAL, the slot's
// confirmed_flush_lsn keeps up with pg_current_wal_lsn. During the churn,
// paced to last at least churnFor, the confirmed position is never more
// than maxLag behind: the relay confirms within ConfirmEvery (100 ms) of
// the last transaction it finished, so the lag is the time the walsender
// and the relay take for the other table's rows; a slot that stood still
// during the churn would fall about churnFor behind. After the churn it
// reaches the WAL position within two status intervals plus slack. Then
// WAL of a table outside the publication, which the walsender sends no
// transaction for, is confirmed through keepalives alone (invariant 2), as
// fast.
//
// Not parallel: see TestBigTransaction.
func TestIdleOutboxFollowsWAL(t *testing.T) {
	const (
		interval  = 2 * time.Second
		churnWant = 50 << 20 // bytes of WAL
		churnFor  = 8 * time.Second
		slack     = 3 * time.Second
		// The lag is measured from the end of the first transaction past
		// confirmed_flush_lsn, so it reads 0 while the slot is within the
		// last transaction (what this machine showed in 5 runs at a load
		// of 15-21 on 2 cores), and about 7 s for a slot that does not
		// move (7.1 s with the relay stopped by SIGSTOP during the churn).
		maxLag = 3 * time.Second
	)
	f := newFixture(t, "idle")
	startRelay(t, f.config(t, map[string]string{"status.update.interval.ms": fmt.Sprint(interval.Milliseconds())}))
	f.waitStreaming(t)

	// Churn: 1 KB rows into the other table, 5,000 a transaction, no faster
	// than churnWant bytes in churnFor. After each transaction, the lag is
	// how long ago the WAL passed confirmed_flush_lsn: at least since the
	// end of the first transaction that went past it.
	type walAt struct {
		at  time.Time
		lsn capture.LSN
	}
	var written []walAt
	started := time.Now()
	from := walLSN(t, f.admin)
	end := from
	lagBytes, lag := uint64(0), time.Duration(0)
	for end-from < churnWant {
		testbed.Exec(t, f.admin, fmt.Sprintf(`INSERT INTO %s.other (junk) SELECT repeat(md5(g::text), 32) FROM generate_series(1, 5000) g`, f.name))
		end = walLSN(t, f.admin)
		now := time.Now()
		written = append(written, walAt{now, end})
		c := confirmedFlush(t, f.admin, f.name)
		if end > c {
			lagBytes = max(lagBytes, uint64(end-c))
		}
		for _, w := range written {
			if w.lsn > c {
				lag = max(lag, now.Sub(w.at))
				break
			}
		}
		if end-from < churnWant {
			time.Sleep(time.Until(started.Add(time.Duration(float64(churnFor) * float64(end-from) / churnWant))))
		}
	}
	t.Logf("churn: %d MB of WAL in %d transactions of the other table in %s; largest lag of confirmed_flush_lsn seen meanwhile %s, %d MB (limit %s)",
		(end-from)>>20, len(written), time.Since(started).Round(time.Millisecond), lag.Round(time.Millisecond), lagBytes>>20, maxLag)
	if lag > maxLag {
		t.Errorf("during the churn confirmed_flush_lsn fell %s behind pg_current_wal_lsn; want at most %s", lag.Round(time.Millisecond), maxLag)
	}

	// Right after the churn, then after 1 MB of WAL outside the publication.
	testbed.Exec(t, f.admin, `CREATE TABLE `+f.name+`.unpublished (junk text)`)
	for _, phase := range []string{"after the churn", "after WAL outside the publication"} {
		if phase != "after the churn" {
			testbed.Exec(t, f.admin, fmt.Sprintf(`INSERT INTO %s.unpublished SELECT repeat(md5(g::text), 32) FROM generate_series(1, 1000) g`, f.name))
		}
		target := walLSN(t, f.admin)
		took, ok := waitConfirmed(t, f, target, 2*interval+slack)
		if !ok {
			t.Fatalf("%s: confirmed_flush_lsn %s still behind pg_current_wal_lsn %s after %s (2 × status.update.interval.ms + %s)",
				phase, confirmedFlush(t, f.admin, f.name), target, 2*interval+slack, slack)
		}
		t.Logf("%s: confirmed_flush_lsn reached pg_current_wal_lsn %s in %s (limit %s)", phase, target, took.Round(time.Millisecond), 2*interval+slack)
	}
	if parts := testbed.EndOffsets(t, f.topic("orders")); parts != nil {
		t.Errorf("the idle outbox created topic %s: %v", f.topic("orders"), parts)
	}
}

// waitConfirmed polls the slot until its confirmed_flush_lsn reaches
// target or timeout passes.
func waitConfirmed(t *testing.T, f *fixture, target capture.LSN, timeout time.Duration) (time.Duration, bool) {
	t.Helper()
	start := time.Now()
	for time.Since(start) < timeout {
		if confirmedFlush(t, f.admin, f.name) >= target {
			return time.Since(start), true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Since(start), false
}
