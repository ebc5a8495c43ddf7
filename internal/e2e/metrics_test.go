package e2e_test

import (
	"bufio"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// testMetricsWhileKafkaPaused: the private broker is paused (SIGSTOP) under
// load. /metrics shows the replication lag rising while nothing can be
// acknowledged and /readyz turns 503; after SIGCONT the relay recovers by
// itself, /readyz is 200 again, the lag falls back, and nothing is missing.
func testMetricsWhileKafkaPaused(t *testing.T, b *privateBed) {
	f := b.newFixture(t, "metrics")
	r := b.startRelay(t, b.config(t, f), logFile(t, "metrics-relay"), "--http-addr", "127.0.0.1:0")
	addr := r.httpAddr(t, 30*time.Second)
	f.waitStreaming(t)
	waitStatus(t, addr, "/readyz", http.StatusOK, 30*time.Second)
	l := startFaultLoad(t, b, f, 200)
	time.Sleep(2 * time.Second)
	before := metric(t, addr, "outboxrelay_replication_lag_bytes")

	resume := b.PauseKafka(t)
	paused := time.Now()
	waitMetric(t, addr, "outboxrelay_replication_lag_bytes", 30*time.Second, func(v float64) bool { return v > before+256<<10 })
	rising := metric(t, addr, "outboxrelay_replication_lag_bytes")
	waitStatus(t, addr, "/readyz", http.StatusServiceUnavailable, 60*time.Second)
	notReady := time.Since(paused)

	resume()
	resumedAt := time.Now()
	waitStatus(t, addr, "/readyz", http.StatusOK, 60*time.Second)
	ready := time.Since(resumedAt)
	l.finish(t)
	waitMetric(t, addr, "outboxrelay_replication_lag_bytes", 60*time.Second, func(v float64) bool { return v < 64<<10 })
	rep, _, _ := b.verifyOutbox(t, f)
	requireComplete(t, "Kafka paused", rep)
	t.Logf("Kafka paused: lag %.0f KiB before, %.0f KiB while paused; /readyz 503 after %s, 200 again %s after resuming; then the lag fell under 64 KiB; %s",
		before/1024, rising/1024, notReady.Round(100*time.Millisecond), ready.Round(100*time.Millisecond), rep)
}

func waitStatus(t *testing.T, addr, path string, want int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := 0
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + addr + path)
		if err == nil {
			last = resp.StatusCode
			resp.Body.Close()
			if last == want {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s answered %d, not %d, for %s", path, last, want, timeout)
}

// metric reads one unlabelled series from /metrics.
func metric(t *testing.T, addr, name string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return f
		}
	}
	t.Fatalf("/metrics has no series %s", name)
	return 0
}

func waitMetric(t *testing.T, addr, name string, timeout time.Duration, ok func(float64) bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var v float64
	for time.Now().Before(deadline) {
		if v = metric(t, addr, name); ok(v) {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s stayed at %s for %s", name, fmt.Sprint(v), timeout)
}
