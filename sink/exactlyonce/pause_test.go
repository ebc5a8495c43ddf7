package exactlyonce

import (
	"testing"
	"time"
)

// The pause after a commit: linger.ms after a busy transaction (a
// backlog) or before anything was learned; after a small one, the
// coordinator's recent marker time, never more than linger.ms.
func TestTxnPause(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		markers time.Duration
		n       int
		want    time.Duration
	}{
		{-1, 10, 5 * ms},              // nothing learned yet
		{2 * ms, busyRecords, 5 * ms}, // a backlog: batch
		{2 * ms, 10, 2 * ms},
		{0, 1, 0},
		{9 * ms, 10, 5 * ms}, // never above linger.ms
	} {
		if got := txnPause(5*ms, c.markers, c.n); got != c.want {
			t.Errorf("txnPause(5ms, %s, %d) = %s, want %s", c.markers, c.n, got, c.want)
		}
	}
}

// The marker time estimate: CONCURRENT_TRANSACTIONS answers move it a
// quarter of the way up to the pause plus the time spent retrying; an
// acceptance at once a quarter of the way down to three quarters of the
// pause; it stays within [0, linger.ms].
func TestNextMarkerWait(t *testing.T) {
	ms := time.Millisecond
	lim := 5 * ms
	for _, c := range []struct {
		name          string
		est, retrying time.Duration
		concurrent    int
		want          time.Duration
	}{
		{"first: starts at the limit, probes down", -1, 0, 0, 5*ms - 5*ms/16},
		{"accepted at once", 2 * ms, 0, 0, 2*ms - 2*ms/16},
		{"refused, then accepted", 1 * ms, 4 * ms, 2, 2 * ms},
		{"capped", 5 * ms, 40 * ms, 6, 5 * ms},
	} {
		if got := nextMarkerWait(c.est, c.retrying, c.concurrent, lim); got != c.want {
			t.Errorf("%s: nextMarkerWait(%s, %s, %d) = %s, want %s", c.name, c.est, c.retrying, c.concurrent, got, c.want)
		}
	}
	// Accepted at once again and again, the pause shrinks toward nothing;
	// markers that take 2 ms (a refusal below it, answered after 1 ms
	// more) hold it around there.
	est := lim
	for range 100 {
		est = nextMarkerWait(est, 0, 0, lim)
	}
	if est > 100*time.Microsecond {
		t.Errorf("after 100 acceptances at once the estimate is %s, want it near 0", est)
	}
	for range 200 {
		if est < 2*ms {
			est = nextMarkerWait(est, 2*ms-est+ms, 1, lim)
		} else {
			est = nextMarkerWait(est, 0, 0, lim)
		}
	}
	if est < ms || est > 3*ms {
		t.Errorf("with 2 ms markers the estimate settles at %s, want between 1 and 3 ms", est)
	}
}
