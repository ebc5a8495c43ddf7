package e2e_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/outboxrelay/outboxrelay/internal/verify"
)

// eosConfig is the relay's config with exactly.once.support=required.
var eosConfig = map[string]string{"exactly.once.support": "required"}

// eosCycles is the exactly-once crash loop's SIGKILLs: 5 in make test,
// OUTBOXRELAY_EOS_CYCLES (make soak-eos: 100) otherwise.
func eosCycles(t *testing.T) int {
	t.Helper()
	v := os.Getenv("OUTBOXRELAY_EOS_CYCLES")
	if v == "" {
		return 5
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("OUTBOXRELAY_EOS_CYCLES=%q: want a positive number", v)
	}
	return n
}

// TestExactlyOnce runs the relay with exactly.once.support=required on a
// private bed under the fault load (2,000 events/s) and reads the topics
// as a read_committed consumer does: every event exactly once, each
// aggregate in commit order, through SIGKILLs, a zombie instance and a
// broker restart mid-transaction (invariant 10). With
// OUTBOXRELAY_EOS_COMPARE=1 the same crash loop runs at-least-once too,
// counting the duplicates exactly-once avoids.
func TestExactlyOnce(t *testing.T) {
	t.Parallel()
	b := startPrivateBed(t)
	cycles := eosCycles(t)
	t.Run("CrashLoop", func(t *testing.T) { testEOSCrashLoop(t, b, cycles, true) })
	if os.Getenv("OUTBOXRELAY_EOS_COMPARE") == "1" {
		t.Run("CrashLoopAtLeastOnce", func(t *testing.T) { testEOSCrashLoop(t, b, cycles, false) })
	}
	t.Run("ZombieFenced", func(t *testing.T) { testZombieFenced(t, b) })
	t.Run("BrokerRestartMidTransaction", func(t *testing.T) { testEOSBrokerRestart(t, b) })
}

// testEOSCrashLoop: SIGKILL the relay at random moments under load and
// restart it; with exactly-once a read_committed reader sees every event
// once (the verifier and Kafka's console consumer both count); without,
// the duplicates are counted.
func testEOSCrashLoop(t *testing.T, b *privateBed, cycles int, eos bool) {
	f := b.newFixture(t, "eosloop")
	extra := map[string]string{}
	if eos {
		extra = eosConfig
	}
	cfg := b.config(t, f, extra)
	log := logFile(t, "relays")
	r := b.startRelay(t, cfg, log)
	f.waitStreaming(t)
	l := startFaultLoad(t, b, f, faultRate(t))
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0))
	loopStart := time.Now()
	for i := range cycles {
		up := 300*time.Millisecond + time.Duration(rng.Int64N(int64(3200*time.Millisecond)))
		select {
		case <-r.done:
			t.Fatalf("cycle %d: the relay exited by itself (%v)", i+1, r.waitErr)
		case <-time.After(up):
		}
		r.signal(t, syscall.SIGKILL)
		if code := r.wait(t, 5*time.Second); code != -1 {
			t.Fatalf("cycle %d: relay exit code %d after SIGKILL; want -1 (killed)", i+1, code)
		}
		waitSlotInactive(t, f.admin, f.name, 30*time.Second)
		fmt.Fprintf(log, "--- e2e: cycle %d: SIGKILL after %s\n", i+1, up.Round(time.Millisecond))
		r = b.startRelay(t, cfg, log)
	}
	f.waitStreaming(t)
	time.Sleep(2 * time.Second)
	stats := l.finish(t)
	loopTook := time.Since(loopStart)
	target := walLSN(t, f.admin)
	if took, ok := waitConfirmed(t, f, target, 2*time.Minute); !ok {
		t.Fatalf("after the crash loop the slot did not confirm %s within %s; %s", target, took.Round(time.Second), f.slotState(t))
	}
	r.stop(t, 15*time.Second)
	rep := b.verifyCommitted(t, f)
	mode := "at-least-once"
	if eos {
		mode = "exactly-once"
	}
	t.Logf("%s crash loop: %d SIGKILLs in %s; load %s", mode, cycles, loopTook.Round(time.Second), stats)
	t.Logf("%s crash loop, read_committed: %d events, %d deliveries, %d duplicates (%d events), %d missing, %d aggregates out of order",
		mode, rep.Events, rep.Deliveries, rep.Duplicated(), len(rep.Duplicates), len(rep.Missing), len(rep.OutOfOrder))
	requireComplete(t, mode+" crash loop", rep)
	if !eos {
		return
	}
	if rep.Duplicated() != 0 {
		t.Errorf("exactly-once: a read_committed reader sees %d duplicates (%d events)", rep.Duplicated(), len(rep.Duplicates))
	}
	b.consoleCount(t, f, rep.Events)
	// What the kills cut off: records of aborted transactions, which a
	// read_uncommitted reader (kafka-go's fetch) does see.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	all, err := verify.Topics(ctx, &kafka.Dialer{Timeout: 10 * time.Second}, b.KafkaBrokers, f.topicNames(faultTopics), "id")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("exactly-once crash loop: a read_uncommitted reader sees %d records, %d of them in aborted transactions", len(all), len(all)-rep.Deliveries)
}

// consoleCount reads the topics with Kafka's own console consumer
// (--isolation-level read_committed) and requires every event id exactly
// once, want in all.
func (b *privateBed) consoleCount(t *testing.T, f *fixture, want int) {
	t.Helper()
	seen := map[string]int{}
	for _, topic := range f.topicNames(faultTopics) {
		out, err := b.Devenv("consume", topic, "--isolation-level", "read_committed", "--timeout-ms", "15000")
		if err != nil && !strings.Contains(err.Error(), "TimeoutException") {
			t.Fatalf("console consumer on %s: %v", topic, err) // its reason, not only a short count
		}
		for _, line := range strings.Split(out, "\n") {
			if id, ok := headerID(line); ok {
				seen[id]++
			}
		}
	}
	dups := 0
	for _, n := range seen {
		dups += n - 1
	}
	t.Logf("kafka-console-consumer --isolation-level read_committed: %d distinct event ids, %d duplicates (want %d, 0)", len(seen), dups, want)
	if len(seen) != want || dups != 0 {
		t.Errorf("Kafka's console consumer sees %d distinct events and %d duplicates; want %d and 0", len(seen), dups, want)
	}
}

// headerID finds the id header in a console consumer line
// ("id:123,other:x<TAB>key<TAB>value").
func headerID(line string) (string, bool) {
	hs, _, ok := strings.Cut(line, "\t")
	if !ok {
		return "", false
	}
	for _, h := range strings.Split(hs, ",") {
		if v, ok := strings.CutPrefix(h, "id:"); ok {
			return v, true
		}
	}
	return "", false
}

// testZombieFenced: the active relay is frozen (SIGSTOP) and cut off from
// PostgreSQL; a second one takes over and streams; the first, thawed
// (SIGCONT), fails as fenced on its next Kafka request and stops;
// nothing is duplicated or lost.
//
// Regression (CI on 0ac6b8e, 2026-12-02): with transaction.boundary=poll
// the zombie could be frozen between two Kafka transactions with nothing
// queued; thawed, it saw its lock connection gone first, became a standby
// and made no Kafka request at all (safe, but nothing to fence), and the
// test waited for an exit that never came. With interval boundaries of
// 2 s a transaction is open at the freeze but for the few milliseconds of
// a commit, and the thawed worker commits it when its interval ends.
func testZombieFenced(t *testing.T, b *privateBed) {
	f := b.newFixture(t, "zombie")
	cfg := b.config(t, f, eosConfig, map[string]string{"transaction.boundary": "interval", "transaction.boundary.interval.ms": "2000"})
	a := b.startRelay(t, cfg, logFile(t, "zombie"))
	f.waitStreaming(t)
	l := startFaultLoad(t, b, f, 1000)
	time.Sleep(2 * time.Second)
	a.signal(t, syscall.SIGSTOP)
	t.Cleanup(func() { _ = a.cmd.Process.Signal(syscall.SIGCONT) })
	// A network partition from PostgreSQL: its walsender and lock
	// connection end, the slot and the failover lock are free.
	if _, err := f.admin.Exec(context.Background(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'debezium'`); err != nil {
		t.Fatal(err)
	}
	waitSlotInactive(t, f.admin, f.name, 30*time.Second)
	bRelay := b.startRelay(t, cfg, logFile(t, "takeover"))
	f.waitStreaming(t)
	time.Sleep(3 * time.Second)
	a.signal(t, syscall.SIGCONT)
	code, msg := waitRelayExit(t, a, 60*time.Second)
	t.Logf("the zombie exited with %d: %s", code, firstLine(msg))
	if code != 1 || !strings.Contains(msg, "fenced") || !strings.Contains(msg, "took over") {
		t.Errorf("the zombie exited with %d (%q); want 1 and an error saying it was fenced by the instance that took over", code, msg)
	}
	time.Sleep(2 * time.Second)
	stats := l.finish(t)
	target := walLSN(t, f.admin)
	if took, ok := waitConfirmed(t, f, target, 2*time.Minute); !ok {
		t.Fatalf("the slot did not confirm %s within %s; %s", target, took.Round(time.Second), f.slotState(t))
	}
	bRelay.stop(t, 15*time.Second)
	rep := b.verifyCommitted(t, f)
	t.Logf("zombie: load %s; read_committed: %s", stats, rep)
	requireComplete(t, "zombie", rep)
	if rep.Duplicated() != 0 {
		t.Errorf("zombie: %d duplicates", rep.Duplicated())
	}
}

// testEOSBrokerRestart: the broker is killed while the relay has a Kafka
// transaction open under load, and started again: no duplicate, nothing
// missing.
func testEOSBrokerRestart(t *testing.T, b *privateBed) {
	f := b.newFixture(t, "eosbroker")
	cfg := b.config(t, f, eosConfig)
	log := logFile(t, "relays")
	r := b.startRelay(t, cfg, log)
	f.waitStreaming(t)
	l := startFaultLoad(t, b, f, faultRate(t))
	time.Sleep(3 * time.Second)
	b.KillKafka(t)
	time.Sleep(3 * time.Second)
	took := b.UpKafka(t)
	time.Sleep(5 * time.Second)
	stats := l.finish(t)
	target := walLSN(t, f.admin)
	if took, ok := waitConfirmed(t, f, target, 3*time.Minute); !ok {
		t.Fatalf("after the broker restart the slot did not confirm %s within %s; %s", target, took.Round(time.Second), f.slotState(t))
	}
	if r.exited() {
		t.Fatalf("the relay exited: %v", r.waitErr)
	}
	r.stop(t, 15*time.Second)
	rep := b.verifyCommitted(t, f)
	t.Logf("broker restart (up again in %s): load %s; read_committed: %s", took.Round(time.Millisecond), stats, rep)
	requireComplete(t, "broker restart", rep)
	if rep.Duplicated() != 0 {
		t.Errorf("broker restart: %d duplicates", rep.Duplicated())
	}
}
