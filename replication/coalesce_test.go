package replication

import (
	"testing"
	"time"
)

func TestCoalesceWait(t *testing.T) {
	if coalescePause == 0 {
		t.Skip("no coalescing pause on this platform")
	}
	long := time.Second
	cases := []struct {
		name      string
		inTx      bool
		coalesced bool
		buffered  int
		untilDue  time.Duration
		want      time.Duration
	}{
		{"between transactions: read at once", false, false, 0, long, 0},
		{"first empty buffer in a transaction", true, false, 0, long, coalescePause},
		{"once per transaction", true, true, 0, long, 0},
		{"something buffered (a backlog)", true, false, 42, long, 0},
		{"a status update due within the pause", true, false, 0, coalescePause, 0},
		{"a status update overdue", true, false, 0, -time.Millisecond, 0},
	}
	for _, c := range cases {
		if got := coalesceWait(c.inTx, c.coalesced, c.buffered, c.untilDue); got != c.want {
			t.Errorf("%s: coalesceWait = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestPauseWaitsTheWholePause(t *testing.T) {
	// pause is one nanosleep: it blocks for all of d (restarted when a
	// signal interrupts it), so that one read after it takes the rest of
	// the transaction.
	if coalescePause == 0 {
		t.Skip("no coalescing pause on this platform")
	}
	start := time.Now()
	for range 10 {
		pause(coalescePause)
	}
	if el := time.Since(start); el < 10*coalescePause {
		t.Fatalf("10 pauses of %v took %v: pause returned early", coalescePause, el)
	}
}
