package e2e_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
	"github.com/outboxrelay/outboxrelay/internal/verify"

	"github.com/outboxrelay/outboxrelay/capture"
)

// pollAggregates is how many aggregates the poll kill test writes to.
const pollAggregates = 100

// pollKills is the number of SIGKILLs of TestPollReplicasKilled: 6 in
// make test, 20 with OUTBOXRELAY_SOAK=1 (or OUTBOXRELAY_POLL_KILLS).
func pollKills(t *testing.T) int {
	t.Helper()
	if v := os.Getenv("OUTBOXRELAY_POLL_KILLS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("OUTBOXRELAY_POLL_KILLS=%q: want a positive number", v)
		}
		return n
	}
	if os.Getenv("OUTBOXRELAY_SOAK") == "1" {
		return 20
	}
	return 6
}

// TestPollReplicasKilled: three poll-mode replicas share one outbox under
// 1,000 events/s over 100 aggregates while one of them, at random, is
// SIGKILLed and restarted, again and again. verify must find every event
// delivered and every aggregate's first deliveries in order (the id column,
// filled by one inserting connection, is commit order). Duplicates are
// counted: a killed replica's rows that Kafka acknowledged but that were
// not yet marked dispatched are sent again by the replica that takes the
// bucket over, so each kill repeats at most what one replica had claimed
// and not marked (maxPending batches of outbox.poll.batch.size rows).
func TestPollReplicasKilled(t *testing.T) {
	f := pollFixture(t, "pollkill")
	const batch = 100
	cfg := pollConfig(t, f, map[string]string{"outbox.poll.batch.size": strconv.Itoa(batch), "topic.creation.default.partitions": "3"})
	var relays [3]*relayProc
	for i := range relays {
		relays[i] = startRelay(t, cfg)
	}
	l := &faultLoad{
		url:  testbed.Postgres(t),
		rate: 1000,
		insert: fmt.Sprintf(`INSERT INTO %s.outbox (aggregatetype, aggregateid, payload)
			SELECT 'order', 'agg-' || (($1::bigint * 7 + g) %% %d), jsonb_build_object('tx', $1::bigint, 'g', g)
			FROM generate_series(1, $2::int) g ORDER BY g`, f.name, pollAggregates),
		stop: make(chan struct{}), done: make(chan struct{}),
		stats: faultLoadStats{commits: map[int64]capture.LSN{}},
	}
	go l.run(connect(t))
	t.Cleanup(l.halt)

	kills := pollKills(t)
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 0))
	t.Logf("poll kill loop: %d SIGKILLs of 3 replicas, from seed %d", kills, seed)
	for i := range kills {
		time.Sleep(500*time.Millisecond + time.Duration(rng.Int64N(int64(2500*time.Millisecond))))
		k := rng.IntN(len(relays))
		if relays[k].exited() {
			t.Fatalf("kill %d: replica %d exited by itself (%v):\n%s", i+1, k, relays[k].waitErr, relays[k].logTail(20))
		}
		relays[k].signal(t, syscall.SIGKILL)
		relays[k].wait(t, 5*time.Second)
		relays[k] = startRelay(t, cfg)
	}
	time.Sleep(2 * time.Second)
	stats := l.finish(t)
	waitDispatched(t, f.admin, f, 2*time.Minute)
	// The replicas share the buckets: each holds some, none twice.
	held := 0
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		var shares []int
		held = 0
		for _, r := range relays {
			n := lastHeld(r)
			shares = append(shares, n)
			held += n
		}
		if held == 64 && !slices.Contains(shares, 0) {
			t.Logf("poll kill loop: buckets held by the three replicas at the end: %v", shares)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("buckets held by the replicas: %v; want all 64, shared by the three", shares)
		}
	}
	for _, r := range relays {
		r.stop(t, 20*time.Second)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	events, err := verify.Outbox(ctx, f.admin, verify.OutboxQuery{Table: f.name + ".outbox", IDColumn: "id", KeyColumn: "aggregateid", OrderBy: "id"})
	if err != nil {
		t.Fatal(err)
	}
	deliveries, err := verify.Topics(ctx, &kafka.Dialer{Timeout: 10 * time.Second}, testbed.KafkaBrokers(t), []string{f.topic("order")}, "id")
	if err != nil {
		t.Fatal(err)
	}
	rep := verify.Check(events, deliveries)
	t.Logf("poll kill loop: load %s", stats)
	t.Logf("poll kill loop: %d SIGKILLs; %d events, %d deliveries, %d duplicates (%d events): %.1f per kill",
		kills, rep.Events, rep.Deliveries, rep.Duplicated(), len(rep.Duplicates), float64(rep.Duplicated())/float64(kills))
	requireComplete(t, "poll kill loop", rep)
	if stats.failed != 0 {
		t.Errorf("the load saw %d failed transactions (%v)", stats.failed, stats.lastErr)
	}
	// Each kill repeats at most the killed replica's claimed, unmarked rows.
	if bound := kills * 8 * batch; rep.Duplicated() > bound {
		t.Errorf("%d duplicates after %d kills: more than the %d a kill can explain (8 pending batches of %d rows each)", rep.Duplicated(), kills, bound, batch)
	}
}

// lastHeld is the bucket count of a replica's last "poll mode: buckets" line.
func lastHeld(r *relayProc) int {
	n := 0
	for _, line := range strings.Split(r.log(), "\n") {
		if !strings.Contains(line, "poll mode: buckets") {
			continue
		}
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "held="); ok {
				n, _ = strconv.Atoi(v)
			}
		}
	}
	return n
}
