package e2e_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
)

// TestPartitioningMatchesJavaAndKeepsAggregateOrder: on a 3-partition topic
// every aggregate lands on the partition Kafka's Java producer picks for its
// key (checked by producing the same keys with Kafka's console producer),
// and each aggregate's events arrive in the order they were committed.
func TestPartitioningMatchesJavaAndKeepsAggregateOrder(t *testing.T) {
	t.Parallel()
	const (
		aggregates = 100
		events     = 10000
		perAgg     = events / aggregates
	)
	f := newFixture(t, "part")
	admin := f.admin

	// Java's answer: one record per key through the real Java client.
	javaTopic := f.name + ".java"
	createTopic(t, javaTopic, 3)
	lines := make([]string, aggregates)
	for a := range aggregates {
		lines[a] = fmt.Sprintf("agg-%d|v", a)
	}
	started := time.Now()
	javaProduce(t, javaTopic, lines)
	javaPartition := map[string]int{}
	for _, r := range f.consume(t, javaTopic, aggregates, 60*time.Second, 500*time.Millisecond) {
		javaPartition[r.Key] = r.Partition
	}
	if len(javaPartition) != aggregates {
		t.Fatalf("console producer wrote %d distinct keys, want %d", len(javaPartition), aggregates)
	}
	t.Logf("Java console producer: %d keys in %s", aggregates, time.Since(started).Round(time.Millisecond))

	startRelay(t, f.config(t, map[string]string{"topic.creation.default.partitions": "3"}))
	f.waitStreaming(t)

	// Event g belongs to aggregate g%100 with sequence g/100, inserted in
	// order of g, in transactions of 1 to 500 rows.
	started = time.Now()
	sizes := []int{1, 3, 7, 20, 100, 500}
	for g, i := 0, 0; g < events; i++ {
		n := min(sizes[i%len(sizes)], events-g)
		testbed.Exec(t, admin, fmt.Sprintf(`INSERT INTO %s.outbox (aggregatetype, aggregateid, payload)
			SELECT 'orders', 'agg-' || (g %% %d), jsonb_build_object('agg', g %% %d, 'seq', g / %d)
			FROM generate_series(%d, %d) g ORDER BY g`, f.name, aggregates, aggregates, aggregates, g, g+n-1))
		g += n
	}
	t.Logf("inserted %d events over %d aggregates in %s", events, aggregates, time.Since(started).Round(time.Millisecond))

	recs := f.consume(t, f.topic("orders"), events, 120*time.Second, time.Second)
	t.Logf("consumed %d records %s after the first insert", len(recs), time.Since(started).Round(time.Millisecond))
	if len(recs) != events {
		t.Errorf("topic %s: %d records, want %d", f.topic("orders"), len(recs), events)
	}

	relayPartition := map[string]int{}
	nextSeq := map[string]int{}
	perPartition := map[int]int{}
	for _, r := range recs {
		if p, ok := relayPartition[r.Key]; ok && p != r.Partition {
			t.Errorf("key %s on partitions %d and %d", r.Key, p, r.Partition)
		}
		relayPartition[r.Key] = r.Partition
		perPartition[r.Partition]++
		var v struct {
			Agg int `json:"agg"`
			Seq int `json:"seq"`
		}
		if err := json.Unmarshal(r.Value, &v); err != nil {
			t.Fatalf("record %d/%d value %q: %v", r.Partition, r.Offset, r.Value, err)
		}
		if want := fmt.Sprintf("agg-%d", v.Agg); r.Key != want {
			t.Errorf("record %d/%d: key %s, payload says %s", r.Partition, r.Offset, r.Key, want)
		}
		if v.Seq != nextSeq[r.Key] {
			t.Errorf("key %s: seq %d at %d/%d, want %d (per-aggregate order broken)", r.Key, v.Seq, r.Partition, r.Offset, nextSeq[r.Key])
		}
		nextSeq[r.Key] = v.Seq + 1
	}
	matched := 0
	for key, jp := range javaPartition {
		rp, ok := relayPartition[key]
		switch {
		case !ok:
			t.Errorf("key %s: no record from the relay", key)
		case rp != jp:
			t.Errorf("key %s: relay wrote partition %d, Java's producer picks %d", key, rp, jp)
		default:
			matched++
		}
		if n := nextSeq[key]; ok && n != perAgg {
			t.Errorf("key %s: last seq %d, want %d", key, n-1, perAgg-1)
		}
	}
	t.Logf("partitions matched Java's for %d of %d keys; records per partition %v", matched, aggregates, perPartition)
	if len(perPartition) != 3 {
		t.Errorf("records on %d partitions, want all 3 used: %v", len(perPartition), perPartition)
	}
}
