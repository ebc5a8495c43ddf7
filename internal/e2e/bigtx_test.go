package e2e_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
)

// TestBigTransaction: one transaction of 100,000 rows (about 50 MB of
// payload) relays completely while the relay's peak RSS stays bounded.
//
// Not parallel, like TestIdleOutboxFollowsWAL: every walsender decodes all
// of the database's WAL, so this test's 60 MB would slow down the slots of
// the other tests; run first and alone, it is behind their slots' start.
func TestBigTransaction(t *testing.T) {
	const (
		rows   = 100000
		pad    = 500 // payload bytes per row beyond the sequence
		maxRSS = 64  // MiB, the project's target; the payloads alone are ~50 MiB
	)
	f := newFixture(t, "big")
	r := startRelay(t, f.config(t, nil))
	f.waitStreaming(t)

	started := time.Now()
	testbed.Exec(t, f.admin, fmt.Sprintf(`INSERT INTO %s.outbox (aggregatetype, aggregateid, payload)
		SELECT 'big', 'agg-' || (g %% 100), jsonb_build_object('seq', g, 'pad', repeat('x', %d))
		FROM generate_series(1, %d) g ORDER BY g`, f.name, pad, rows))
	committed := time.Since(started)

	seen := make(map[int64]bool, rows)
	recs := f.consume(t, f.topic("big"), rows, 150*time.Second, time.Second)
	drained := time.Since(started)
	dups := 0
	for _, rec := range recs {
		if seen[rec.ID] {
			dups++
		}
		seen[rec.ID] = true
	}
	if len(recs) != rows || len(seen) != rows || dups != 0 {
		t.Errorf("%d records, %d distinct ids, %d duplicates; want %d each once", len(recs), len(seen), dups, rows)
	}
	rss := r.peakRSSMiB(t)
	took := r.stop(t, 10*time.Second)
	t.Logf("100,000-row transaction: committed in %s, all records consumed %s after the insert began; relay stopped in %s",
		committed.Round(time.Millisecond), drained.Round(time.Millisecond), took.Round(time.Millisecond))
	t.Logf("peak RSS: %.0f MiB", rss)
	if rss > maxRSS {
		t.Errorf("peak RSS %.1f MiB relaying a %d-row transaction; want at most %d MiB (work in flight must be bounded)", rss, rows, maxRSS)
	}
}
