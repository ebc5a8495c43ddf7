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

	"github.com/outboxrelay/outboxrelay/internal/testbed"
	"github.com/outboxrelay/outboxrelay/internal/verify"

	"github.com/outboxrelay/outboxrelay/capture"
)

// faultPlan is how hard TestFaults pushes: the short form runs in make
// test, the long one with OUTBOXRELAY_SOAK=1 (make soak).
type faultPlan struct {
	crashCycles  int
	outage       time.Duration
	pgRestarts   int
	terminations int
}

func planFaults(t *testing.T) faultPlan {
	t.Helper()
	if os.Getenv("OUTBOXRELAY_SOAK") == "1" {
		return faultPlan{crashCycles: 200, outage: 2 * time.Minute, pgRestarts: 5, terminations: 5}
	}
	return faultPlan{crashCycles: 20, outage: 30 * time.Second, pgRestarts: 1, terminations: 1}
}

// TestFaults runs the relay binary through crashes and outages on a
// private bed (its own PostgreSQL and Kafka, see privateBed), under a
// steady load of several aggregates in transactions of 1 to 60 rows, and
// checks every event with internal/verify: nothing missing, first
// deliveries of each aggregate in commit order.
//
// Parallel with the other tests (they use the shared bed); its subtests
// run one after the other, since each fault hits the whole private bed.
func TestFaults(t *testing.T) {
	t.Parallel()
	plan := planFaults(t)
	b := startPrivateBed(t)
	t.Run("MetricsWhileKafkaPaused", func(t *testing.T) { testMetricsWhileKafkaPaused(t, b) })
	t.Run("KafkaPausedBigRecords", func(t *testing.T) { testKafkaPausedBigRecords(t, b) })
	// The outage early: a broker killed with little data recovers fast.
	t.Run("KafkaOutage", func(t *testing.T) { testKafkaOutage(t, b, plan.outage) })
	t.Run("CrashLoop", func(t *testing.T) { testCrashLoop(t, b, plan.crashCycles) })
	t.Run("PostgresRestart", func(t *testing.T) { testPostgresRestart(t, b, plan.pgRestarts) })
	t.Run("WalsenderTerminated", func(t *testing.T) { testWalsenderTerminated(t, b, plan.terminations) })
}

// crashKill is what the crash loop saw at one SIGKILL.
type crashKill struct {
	uptime    time.Duration          // of the relay it killed
	wal       capture.LSN            // pg_current_wal_lsn just before the kill
	confirmed capture.LSN            // the slot's confirmed_flush_lsn once the walsender was gone
	ends      map[partitionKey]int64 // end offsets once the relay was dead
}

// testCrashLoop: SIGKILL the relay at random moments under load, restart
// it each time. Nothing may go missing, first deliveries keep commit order
// per aggregate, and an event may come again only from a relay started
// after a kill at which its transaction was not yet confirmed.
func testCrashLoop(t *testing.T, b *privateBed, cycles int) {
	testCrashLoopOf(t, b, cycles, crashLoad{})
}

// crashLoad varies what the crash loop's load writes: outbox rows (the
// zero value), or with insert and extra config another way of emitting
// the same events (TestMessagesCrashLoop).
type crashLoad struct {
	extra  func(f *fixture) map[string]string
	insert func(f *fixture) string
	rate   int
}

func testCrashLoopOf(t *testing.T, b *privateBed, cycles int, load crashLoad) {
	f := b.newFixture(t, "crash")
	var extra map[string]string
	if load.extra != nil {
		extra = load.extra(f)
	}
	cfg := b.config(t, f, extra)
	log := logFile(t, "relays")
	topics := f.topicNames(faultTopics)
	r := b.startRelay(t, cfg, log)
	f.waitStreaming(t)
	started := confirmedFlush(t, f.admin, f.name)
	insert, rate := faultInsert(f), faultRate(t)
	if load.insert != nil {
		insert, rate = load.insert(f), load.rate
	}
	l := startFaultLoadSQL(t, b, f, rate, insert)

	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("OUTBOXRELAY_CRASH_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("OUTBOXRELAY_CRASH_SEED=%q: %v", v, err)
		}
		seed = n
	}
	rng := rand.New(rand.NewPCG(seed, 0))
	t.Logf("crash loop: %d SIGKILLs, kill moments from seed %d (OUTBOXRELAY_CRASH_SEED)", cycles, seed)

	loopStart := time.Now()
	var kills []crashKill
	for i := range cycles {
		// Some kills land before the relay streams, most while it does.
		up := 300*time.Millisecond + time.Duration(rng.Int64N(int64(3200*time.Millisecond)))
		select {
		case <-r.done:
			t.Fatalf("cycle %d: the relay exited by itself (%v)", i+1, r.waitErr)
		case <-time.After(up):
		}
		k := crashKill{uptime: up, wal: walLSN(t, f.admin)}
		r.signal(t, syscall.SIGKILL)
		if code := r.wait(t, 5*time.Second); code != -1 {
			t.Fatalf("cycle %d: relay exit code %d after SIGKILL; want -1 (killed)", i+1, code)
		}
		waitSlotInactive(t, f.admin, f.name, 30*time.Second)
		k.confirmed = confirmedFlush(t, f.admin, f.name)
		k.ends = waitEndOffsets(t, b, topics)
		kills = append(kills, k)
		fmt.Fprintf(log, "--- e2e: cycle %d: SIGKILL after %s; slot confirmed %s\n", i+1, up.Round(time.Millisecond), k.confirmed)
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

	rep, events, deliveries := b.verifyOutbox(t, f)
	acc := accountRedeliveries(kills, events, deliveries, stats.commits)
	for i, k := range kills {
		t.Logf("cycle %3d: killed after %5s; confirmed %s, %6d bytes of WAL unconfirmed at the kill; the next relay sent %d events again",
			i+1, k.uptime.Round(time.Millisecond), k.confirmed, uint64(k.wal-min(k.wal, k.confirmed)), acc.again[i+1])
	}
	t.Logf("crash loop: %d SIGKILLs in %s; load %s; slot confirmed %s → %s",
		cycles, loopTook.Round(time.Second), stats, started, target)
	t.Logf("crash loop: %d events, %d deliveries, %d duplicates (%d events), %d of them within one relay's life; %d sent again although confirmed before the kill",
		rep.Events, rep.Deliveries, rep.Duplicated(), len(rep.Duplicates), acc.inSession, len(acc.confirmedAgain))
	requireComplete(t, "crash loop", rep)
	if stats.failed != 0 {
		t.Errorf("the load saw %d failed transactions (%v); nothing but the relay was touched", stats.failed, stats.lastErr)
	}
	if acc.unknown != 0 {
		t.Errorf("%d duplicated events belong to transactions whose commit position the load did not record", acc.unknown)
	}
	if n := len(acc.confirmedAgain); n != 0 {
		t.Errorf("%d events were sent again by a relay started after a kill at which the slot had already confirmed their transaction (at-least-once must replay only from the confirmed LSN), e.g. %v",
			n, acc.confirmedAgain[:min(n, 10)])
	}
}

// redeliveries is who sent events again in a crash loop.
type redeliveries struct {
	again          []int    // by relay (0 = the first): its deliveries of events delivered before
	inSession      int      // of those, repeats of the relay's own earlier delivery
	confirmedAgain []string // event ids sent again after a kill that had confirmed them
	unknown        int      // repeats whose transaction's commit position is unknown
}

// accountRedeliveries attributes every delivery to the relay that wrote it:
// relay k (after k kills) wrote the offsets between the end offsets read
// after kill k-1 and after kill k. A repeat written by relay k ≥ 1 is
// legitimate only when its transaction ended past the slot's confirmed LSN
// at kill k-1: the load's commit position (read right after the commit) ≤
// that LSN proves the commit was confirmed.
func accountRedeliveries(kills []crashKill, events []verify.Event, deliveries []verify.Delivery, commits map[int64]capture.LSN) redeliveries {
	acc := redeliveries{again: make([]int, len(kills)+1)}
	byID := make(map[string]verify.Event, len(events))
	for _, ev := range events {
		byID[ev.ID] = ev
	}
	// verify.Topics returns each partition in offset order, and an event's
	// deliveries share its key's partition: they come in the order written.
	lastBy := map[string]int{} // event id → relay of its latest delivery
	for _, d := range deliveries {
		p := partitionKey{d.Topic, d.Partition}
		relay := len(kills)
		for k, kill := range kills {
			if d.Offset < kill.ends[p] {
				relay = k
				break
			}
		}
		prev, seen := lastBy[d.ID]
		lastBy[d.ID] = relay
		if !seen {
			continue
		}
		acc.again[relay]++
		if prev == relay {
			acc.inSession++
		}
		if relay == 0 {
			continue
		}
		ev, ok := byID[d.ID]
		lsn, known := commits[ev.Order/ordPerTx]
		switch {
		case !ok || !known:
			acc.unknown++
		case lsn <= kills[relay-1].confirmed:
			acc.confirmedAgain = append(acc.confirmedAgain, fmt.Sprintf("%s (commit ≤ %s, confirmed %s at kill %d)", d.ID, lsn, kills[relay-1].confirmed, relay))
		}
	}
	return acc
}

// testKafkaOutage: the broker is killed for outage under load. The relay
// stays up with flat memory, confirms nothing while the broker is down,
// resumes by itself once it is back, and loses nothing.
func testKafkaOutage(t *testing.T, b *privateBed, outage time.Duration) {
	const maxRSS = 64.0 // MiB
	f := b.newFixture(t, "outage")
	r := b.startRelay(t, b.config(t, f), logFile(t, "relay"))
	f.waitStreaming(t)
	rss := sampleRSS(t, r.cmd.Process.Pid, time.Second)
	l := startFaultLoad(t, b, f, faultRate(t))
	t0 := time.Now()
	time.Sleep(10 * time.Second)

	killed := time.Now()
	pid := b.KillKafka(t)
	// Acknowledgements that came before the kill are confirmed within a
	// status interval (1 s); after that the position must stand still.
	time.Sleep(3 * time.Second)
	base := confirmedFlush(t, f.admin, f.name)
	checks, moved := 0, 0
	for time.Since(killed) < outage {
		time.Sleep(time.Second)
		if r.exited() {
			t.Fatalf("the relay exited during the Kafka outage: %v", r.waitErr)
		}
		checks++
		if c := confirmedFlush(t, f.admin, f.name); c != base {
			moved++
			if moved == 1 {
				t.Errorf("confirmed_flush_lsn moved from %s to %s %s after the broker was killed: nothing can have been acknowledged",
					base, c, time.Since(killed).Round(time.Second))
			}
		}
	}
	retained := walLSN(t, f.admin) - base
	restarting := time.Now()
	upTook := b.UpKafka(t)
	back := time.Now()
	walBack := walLSN(t, f.admin)
	if _, ok := waitConfirmedPast(t, f, base, 2*time.Minute); !ok {
		t.Fatalf("the relay did not resume: confirmed_flush_lsn still %s 2 minutes after the broker was back; %s", base, f.slotState(t))
	}
	resumed := time.Since(restarting)
	if _, ok := waitConfirmed(t, f, walBack, 3*time.Minute); !ok {
		t.Fatalf("the relay did not catch up with %s within 3 minutes of the broker's return; %s", walBack, f.slotState(t))
	}
	caughtUp := time.Since(restarting)
	time.Sleep(10 * time.Second)
	stats := l.finish(t)
	target := walLSN(t, f.admin)
	if took, ok := waitConfirmed(t, f, target, 2*time.Minute); !ok {
		t.Fatalf("the slot did not confirm %s within %s after the load; %s", target, took.Round(time.Second), f.slotState(t))
	}
	if r.exited() {
		t.Fatalf("the relay exited after the Kafka outage: %v", r.waitErr)
	}
	peak := r.peakRSSMiB(t) // the peak since exec (VmHWM)
	stopAt := time.Now()
	r.stop(t, 15*time.Second)
	rss.halt()

	before, n1 := rss.peakMiB(t0, killed)
	during, n2 := rss.peakMiB(killed, back)
	after, n3 := rss.peakMiB(back, stopAt)
	t.Logf("Kafka outage: broker pid %d killed; restarted after %s; `scripts/devenv up` returned %s later (broker answering metadata); confirmed_flush_lsn checked %d times while down, moved %d times; slot retained %d MiB of WAL",
		pid, restarting.Sub(killed).Round(time.Second), upTook.Round(100*time.Millisecond), checks, moved, retained>>20)
	t.Logf("Kafka outage: from the restart, the relay confirmed again after %s and caught up with the WAL written until the broker answered after %s",
		resumed.Round(10*time.Millisecond), caughtUp.Round(10*time.Millisecond))
	t.Logf("Kafka outage: VmRSS peak before %.1f MiB (%d samples), during %.1f MiB (%d), after %.1f MiB (%d); process peak (VmHWM) %.1f MiB; limit %.0f MiB",
		before, n1, during, n2, after, n3, peak, maxRSS)
	t.Logf("Kafka outage: load %s", stats)
	for _, line := range grepLines(r.log(), "recovered") {
		t.Logf("relay: %s", line)
	}
	if before > maxRSS || during > maxRSS || after > maxRSS || peak > maxRSS {
		t.Errorf("peak RSS over %.0f MiB: before %.1f, during %.1f, after %.1f, process peak %.1f", maxRSS, before, during, after, peak)
	}
	rep, _, _ := b.verifyOutbox(t, f)
	requireComplete(t, "Kafka outage", rep)
}

// testPostgresRestart: `pg_ctl restart -m fast` of the server under load,
// restarts times. The relay reconnects with backoff and loses nothing.
func testPostgresRestart(t *testing.T, b *privateBed, restarts int) {
	f := b.newFixture(t, "pgrestart")
	r := b.startRelay(t, b.config(t, f), logFile(t, "relay"))
	f.waitStreaming(t)
	l := startFaultLoad(t, b, f, faultRate(t))
	for i := range restarts {
		time.Sleep(5 * time.Second)
		took := b.RestartPostgres(t)
		back := time.Now()
		f.admin = b.Connect(t) // the old connection went with the server
		wal := walLSN(t, f.admin)
		waitWalsender(t, f, 0, time.Minute)
		streaming := time.Since(back)
		if took, ok := waitConfirmed(t, f, wal, 2*time.Minute); !ok {
			t.Fatalf("restart %d: the slot did not confirm %s within %s; %s", i+1, wal, took.Round(time.Second), f.slotState(t))
		}
		t.Logf("restart %d: pg_ctl restart took %s; %s after the server was back the relay streamed again, %s after it confirmed the WAL of that moment",
			i+1, took.Round(10*time.Millisecond), streaming.Round(10*time.Millisecond), time.Since(back).Round(10*time.Millisecond))
	}
	time.Sleep(5 * time.Second)
	stats := l.finish(t)
	finishFault(t, b, f, r, "PostgreSQL restart", stats)
}

// testWalsenderTerminated: pg_terminate_backend of the relay's walsender
// while the relay is publishing a 50,000-row transaction, under load,
// times times. The relay reconnects and sends the transaction again,
// whole; nothing is lost, order holds.
func testWalsenderTerminated(t *testing.T, b *privateBed, times int) {
	const burst, seen = 50000, 1000
	f := b.newFixture(t, "walsender")
	r := b.startRelay(t, b.config(t, f), logFile(t, "relay"))
	f.waitStreaming(t)
	l := startFaultLoad(t, b, f, faultRate(t))
	bulk := []string{f.topic("bulk")}
	writer := b.Connect(t)
	// A first bulk row creates the topic, so the burst streams into it
	// from its first record.
	testbed.Exec(t, writer, fmt.Sprintf(`INSERT INTO %s.outbox (aggregatetype, aggregateid, ord, payload) VALUES ('bulk', 'bulk-warm-up', 0, '{}')`, f.name))
	for deadline := time.Now().Add(time.Minute); sumOffsets(t, b, bulk) == 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("topic %s not written a minute after the first bulk row; %s", bulk[0], f.slotState(t))
		}
	}
	for i := range times {
		time.Sleep(3 * time.Second)
		before := sumOffsets(t, b, bulk)
		// ord is the row number: bulk aggregates get rows from this
		// transaction only, so that orders them.
		insert := fmt.Sprintf(`INSERT INTO %s.outbox (aggregatetype, aggregateid, ord, payload)
			SELECT 'bulk', 'bulk-%d-' || (g %% 20), g, jsonb_build_object('g', g, 'pad', repeat('x', 300)) FROM generate_series(1, %d) g ORDER BY g`, f.name, i, burst)
		// The relay publishes the transaction within a second of its
		// commit: insert from another goroutine and watch from this one.
		inserted := make(chan error, 1)
		go func() {
			_, err := writer.Exec(context.Background(), insert)
			inserted <- err
		}()
		published := int64(0)
		deadline := time.Now().Add(time.Minute)
		for published < seen {
			if time.Now().After(deadline) {
				<-inserted // the connection is the goroutine's until then
				t.Fatalf("only %d records of the %d-row transaction in Kafka after a minute; %s", published, burst, f.slotState(t))
			}
			time.Sleep(time.Millisecond)
			published = sumOffsets(t, b, bulk) - before
		}
		pid := walsenderPID(t, f)
		var ok bool
		if err := f.admin.QueryRow(context.Background(), `SELECT pg_terminate_backend($1)`, pid).Scan(&ok); err != nil || !ok {
			t.Fatalf("pg_terminate_backend(%d): %t, %v", pid, ok, err)
		}
		terminated := time.Now()
		if err := <-inserted; err != nil {
			t.Fatalf("inserting the burst: %v", err)
		}
		if published >= burst {
			t.Errorf("termination %d: all %d records of the transaction were in Kafka before the walsender was terminated; not mid-transaction", i+1, burst)
		}
		wal := walLSN(t, f.admin)
		streaming := waitWalsender(t, f, pid, time.Minute)
		if took, ok := waitConfirmed(t, f, wal, 2*time.Minute); !ok {
			t.Fatalf("termination %d: the slot did not confirm %s within %s; %s", i+1, wal, took.Round(time.Second), f.slotState(t))
		}
		t.Logf("termination %d: walsender %d terminated when %d of the %d rows were in Kafka; a new walsender streamed %s later, the transaction was confirmed %s after the termination; the bulk topic holds %d records for it",
			i+1, pid, published, burst, streaming.Round(10*time.Millisecond), time.Since(terminated).Round(10*time.Millisecond), sumOffsets(t, b, bulk)-before)
	}
	time.Sleep(3 * time.Second)
	stats := l.finish(t)
	finishFault(t, b, f, r, "walsender terminated", stats)
}

// finishFault waits until the slot confirmed everything, stops the relay
// with SIGTERM (it must not have exited by itself), logs its reconnects and
// checks every event.
func finishFault(t *testing.T, b *privateBed, f *fixture, r *relayProc, what string, stats faultLoadStats) {
	t.Helper()
	target := walLSN(t, f.admin)
	if took, ok := waitConfirmed(t, f, target, 2*time.Minute); !ok {
		t.Fatalf("%s: the slot did not confirm %s within %s after the load; %s", what, target, took.Round(time.Second), f.slotState(t))
	}
	if r.exited() {
		t.Fatalf("%s: the relay exited: %v", what, r.waitErr)
	}
	r.stop(t, 15*time.Second)
	reconnects := grepLines(r.log(), "session failed, retrying")
	t.Logf("%s: load %s; the relay logged %d reconnect attempts", what, stats, len(reconnects))
	for _, line := range reconnects[:min(len(reconnects), 5)] {
		t.Logf("relay: %s", line)
	}
	if len(reconnects) == 0 {
		t.Errorf("%s: the relay logged no `session failed, retrying`", what)
	}
	rep, _, _ := b.verifyOutbox(t, f)
	requireComplete(t, what, rep)
}

// waitWalsender waits until a walsender other than old (0: any) holds the
// fixture's slot and returns how long that took.
func waitWalsender(t *testing.T, f *fixture, old int32, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for time.Since(start) < timeout {
		var pid *int32
		err := f.admin.QueryRow(context.Background(), `SELECT active_pid FROM pg_replication_slots WHERE slot_name = $1`, f.name).Scan(&pid)
		if err == nil && pid != nil && *pid != old {
			return time.Since(start)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no walsender holds slot %s %s later; %s", f.name, timeout, f.slotState(t))
	return 0
}

// waitConfirmedPast polls the slot until its confirmed_flush_lsn is past
// lsn or timeout passes.
func waitConfirmedPast(t *testing.T, f *fixture, lsn capture.LSN, timeout time.Duration) (time.Duration, bool) {
	t.Helper()
	start := time.Now()
	for time.Since(start) < timeout {
		if confirmedFlush(t, f.admin, f.name) > lsn {
			return time.Since(start), true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start), false
}

// walsenderPID is the pid of the relay's walsender on the fixture's slot.
func walsenderPID(t *testing.T, f *fixture) int32 {
	t.Helper()
	var pid int32
	err := f.admin.QueryRow(context.Background(), `SELECT s.pid FROM pg_stat_replication s JOIN pg_replication_slots r ON r.active_pid = s.pid
		WHERE s.application_name = 'outboxrelay' AND r.slot_name = $1`, f.name).Scan(&pid)
	if err != nil {
		t.Fatalf("finding the relay's walsender on slot %s: %v; %s", f.name, err, f.slotState(t))
	}
	return pid
}

// sumOffsets is the sum of the end offsets of the topics' partitions on
// the private broker: how many records they hold.
func sumOffsets(t *testing.T, b *privateBed, topics []string) int64 {
	t.Helper()
	var n int64
	for _, end := range waitEndOffsets(t, b, topics) {
		n += end
	}
	return n
}

// waitEndOffsets is endOffsets on the private broker, asked again for up to
// 10 s while it fails: a partition of a topic created a moment ago may
// answer NOT_LEADER_FOR_PARTITION until its leader is elected.
func waitEndOffsets(t *testing.T, b *privateBed, topics []string) map[partitionKey]int64 {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ends, err := endOffsets(context.Background(), b.KafkaBrokers, topics)
		if err == nil {
			return ends
		}
		if time.Now().After(deadline) {
			t.Fatalf("end offsets, for 10 s: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// grepLines returns the lines of text that contain s.
func grepLines(text, s string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return out
}
