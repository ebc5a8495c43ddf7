package sink

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"strings"

	"github.com/outboxrelay/outboxrelay/internal/kafkaread"
	"github.com/outboxrelay/outboxrelay/internal/testbed"
	"github.com/outboxrelay/outboxrelay/router"
)

// newCluster starts an in-process kfake broker; it is closed after the test.
func newCluster(t testing.TB, opts ...kfake.Opt) (*kfake.Cluster, string) {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		t.Fatalf("starting kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return c, c.ListenAddrs()[0]
}

// fastConfig is a config with short backoffs so retry tests run quickly.
func fastConfig(brokers ...string) Config {
	return Config{
		Brokers:         brokers,
		Linger:          2 * time.Millisecond,
		RetryBackoff:    5 * time.Millisecond,
		RetryBackoffMax: 50 * time.Millisecond,
		RequestTimeout:  5 * time.Second,
	}
}

func testLogger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

func newTestProducer(t testing.TB, cfg Config) *Producer {
	t.Helper()
	p, err := NewProducer(cfg, testLogger(t))
	if err != nil {
		t.Fatalf("NewProducer: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// acks records every onAck call by event id, to check "exactly once".
type acks struct {
	mu    sync.Mutex
	count map[string]int
	errs  map[string]error
	order []string // ack order, for per-partition callback order
}

func newAcks() *acks { return &acks{count: map[string]int{}, errs: map[string]error{}} }

func (a *acks) cb(id string) func(error) {
	return func(err error) {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.count[id]++
		if err != nil {
			a.errs[id] = err
		}
		a.order = append(a.order, id)
	}
}

// exactlyOnce fails unless each of ids was acknowledged exactly once.
func (a *acks) exactlyOnce(t testing.TB, ids []string) {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, id := range ids {
		if n := a.count[id]; n != 1 {
			t.Errorf("event %s acknowledged %d times, want exactly 1", id, n)
		}
	}
	if len(a.count) != len(ids) {
		t.Errorf("%d events acknowledged, %d sent", len(a.count), len(ids))
	}
}

func (a *acks) err(id string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.errs[id]
}

// readTopic reads every record of every partition of topic, up to the end
// offsets at the time of the call, by partition; a partition with no
// record has no entry. The topic must exist.
func readTopic(t testing.TB, brokers []string, topic string) map[int][]kafka.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := kafkaread.Reader{Broker: brokers[0]}
	parts, err := r.Partitions(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int][]kafka.Message{}
	for _, p := range parts {
		msgs, err := r.Partition(ctx, topic, p, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) > 0 {
			out[p] = msgs
		}
	}
	return out
}

// checkKeyOrder checks that, per key, the sequence numbers in the values
// read back are 0, 1, 2, ... with no gap, duplicate or reordering, and that
// each key stayed on one partition.
func checkKeyOrder(t testing.TB, got map[int][]kafka.Message, perKey int) {
	t.Helper()
	checkFirstDeliveryOrder(t, got, perKey, false)
}

// checkFirstDeliveryOrder is checkKeyOrder that, with dups, accepts
// re-deliveries of records already seen (a retried request the broker had
// written: at-least-once) as long as first deliveries are in order.
func checkFirstDeliveryOrder(t testing.TB, got map[int][]kafka.Message, perKey int, dups bool) {
	t.Helper()
	next := map[string]int{}
	home := map[string]int{}
	for part, msgs := range got {
		for _, m := range msgs {
			k := string(m.Key)
			if h, ok := home[k]; ok && h != part {
				t.Fatalf("key %s on partitions %d and %d", k, h, part)
			}
			home[k] = part
			var seq int
			if _, err := fmt.Sscanf(string(m.Value), "seq=%d", &seq); err != nil {
				t.Fatalf("value %q: %v", m.Value, err)
			}
			if dups && seq < next[k] {
				continue
			}
			if seq != next[k] {
				t.Fatalf("key %s: got seq %d at offset %d of partition %d, want %d (order broken or record lost/duplicated)", k, seq, m.Offset, part, next[k])
			}
			next[k]++
		}
	}
	for k, n := range next {
		if n != perKey {
			t.Errorf("key %s: %d records read, want %d", k, n, perKey)
		}
	}
}

// sendKeyed sends perKey records for each of keys, interleaved, with values
// "seq=N", and returns the event ids in send order.
func sendKeyed(t testing.TB, p *Producer, a *acks, topic string, keys, perKey int) []string {
	t.Helper()
	var ids []string
	ctx := context.Background()
	for i := 0; i < perKey; i++ {
		for k := 0; k < keys; k++ {
			id := fmt.Sprintf("k%d-%d", k, i)
			r := router.Record{Topic: topic, Partition: -1, Key: []byte(fmt.Sprintf("key-%d", k)), Value: []byte(fmt.Sprintf("seq=%d", i)), EventID: id}
			if err := p.Send(ctx, r, a.cb(id)); err != nil {
				t.Fatalf("Send %s: %v", id, err)
			}
			ids = append(ids, id)
		}
	}
	return ids
}

func flush(t testing.TB, p *Producer, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := p.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v", err)
	}
}

// checkJavaPartitions fails unless every record sits on the partition Java's
// default partitioner picks for its key among n.
func checkJavaPartitions(t testing.TB, got map[int][]kafka.Message, n int) {
	t.Helper()
	for part, msgs := range got {
		for _, m := range msgs {
			if want := JavaPartition(m.Key, n, nil); want != part {
				t.Fatalf("key %s on partition %d, Java's partitioner picks %d", m.Key, part, want)
			}
		}
	}
}

// deliveredOnceInOrder checks that every id was acknowledged once without
// error and that partition 0 of "orders" holds exactly those records, with
// values seq=0, seq=1, … in order.
func deliveredOnceInOrder(t *testing.T, a *acks, ids []string, addr string) {
	t.Helper()
	a.exactlyOnce(t, ids)
	for _, id := range ids {
		if err := a.err(id); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	got := readTopic(t, []string{addr}, "orders")
	if len(got[0]) != len(ids) {
		t.Fatalf("%d records in the partition, want %d", len(got[0]), len(ids))
	}
	for i, m := range got[0] {
		if want := fmt.Sprintf("seq=%d", i); string(m.Value) != want {
			t.Fatalf("record %d is %s, want %s", i, m.Value, want)
		}
	}
}

// txnBedProducer is a producer on the bed's Kafka that creates topics of
// one partition, for the bed tests of Kafka transactions.
func txnBedProducer(t *testing.T) *Producer {
	t.Helper()
	cfg := fastConfig(strings.Split(testbed.KafkaBrokers(t), ",")...)
	cfg.TopicPartitions, cfg.TopicReplicationFactor = 1, -1
	return newTestProducer(t, cfg)
}
