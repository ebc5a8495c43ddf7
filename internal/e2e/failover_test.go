package e2e_test

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/outboxrelay/outboxrelay/capture"
)

// TestFailoverKillActive: two relays run the same config; the second waits
// as standby on the failover lock. The active one is killed (SIGKILL) under
// load: the standby takes over within seconds, resumes from the confirmed
// LSN, and no event is missing (duplicates only after that LSN).
func TestFailoverKillActive(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "failover")
	cfg := f.config(t, map[string]string{"slot.retry.delay.ms": "500"})
	active := startRelay(t, cfg)
	f.waitStreaming(t)
	standby := startRelay(t, cfg)
	waitLog(t, standby, "standby", 10*time.Second)

	l := startLoad(t, f, loadRowsPerTx, loadTick)
	time.Sleep(1500 * time.Millisecond)
	killed := time.Now()
	active.signal(t, syscall.SIGKILL)
	if code := active.wait(t, 5*time.Second); code != -1 {
		t.Fatalf("active relay exit code %d after SIGKILL; want -1 (killed)", code)
	}
	confirmed := confirmedFlush(t, f.admin, f.name)
	waitLog(t, standby, "msg=streaming", 30*time.Second)
	took := time.Since(killed)
	time.Sleep(1500 * time.Millisecond)
	txs := l.finish(t)
	n := len(loadIDs(txs))
	recs := f.consume(t, f.topic("orders"), n, 60*time.Second, 2*time.Second)
	checkAtLeastOnce(t, "failover", txs, recs, []capture.LSN{confirmed})
	t.Logf("failover: the standby streamed %s after the active relay was killed; %d events", took.Round(10*time.Millisecond), n)
	if took > 15*time.Second {
		t.Errorf("the standby took %s to take over; want a few seconds", took)
	}
}

// waitLog waits until the relay's log contains s.
func waitLog(t *testing.T, r *relayProc, s string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !strings.Contains(r.log(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in the relay log after %s:\n%s", s, timeout, r.logTail(20))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
