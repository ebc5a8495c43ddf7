package sink

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/outboxrelay/outboxrelay/internal/kafkaread"
	"github.com/outboxrelay/outboxrelay/internal/kafkaread/hostile"
	"github.com/outboxrelay/outboxrelay/router"
)

// TestCloseWhileEncoding: Close (or a request timeout) ends Produce while
// kafka-go's connection goroutine may still be encoding the batch. Each
// request has its own reader, so nothing else touches the one it encodes
// from; with a reader shared by the worker's requests, -race reported it.
func TestCloseWhileEncoding(t *testing.T) {
	_, addr := newCluster(t, kfake.SeedTopics(1, "orders"))
	for iter := range 30 {
		cfg := fastConfig(addr)
		cfg.Compression = kafka.Gzip // slower encoding: a wider window
		cfg.Linger = time.Millisecond
		p, err := NewProducer(cfg, testLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		first := make(chan struct{})
		if err := p.Send(context.Background(), router.Record{Topic: "orders", Partition: 0, Value: []byte("x")}, func(error) { close(first) }); err != nil {
			t.Fatal(err)
		}
		<-first
		for i := range 250 {
			v := make([]byte, 1000)
			rand.Read(v)
			if err := p.Send(context.Background(), router.Record{Topic: "orders", Partition: 0, Key: []byte(fmt.Sprint(i)), Value: v}, func(error) {}); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Duration(1000+iter*100) * time.Microsecond)
		p.Close()
	}
}

// TestTopicCreatedAfterRecentRefresh: a metadata refresh (after any
// NOT_LEADER) and, within the second, an operator creates a topic: the
// first record to it must find it, not fail with ErrTopicMissing because
// the rate-limited refresh was skipped and the cache predates the topic.
func TestTopicCreatedAfterRecentRefresh(t *testing.T) {
	_, addr := newCluster(t, kfake.SeedTopics(1, "orders"), kfake.AllowAutoTopicCreation())
	cfg := fastConfig(addr)
	cfg.AllowAutoCreateTopics = false
	p := newTestProducer(t, cfg)
	ctx := context.Background()
	p.refreshMetadata()
	if _, err := p.TopicPartitions(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	cl := &kafka.Client{Addr: kafka.TCP(addr), Transport: tr}
	res, err := cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{Topic: "fresh", NumPartitions: 1, ReplicationFactor: 1}}})
	if err != nil || res.Errors["fresh"] != nil {
		t.Fatalf("creating topic fresh: %v %v", err, res.Errors["fresh"])
	}
	time.Sleep(200 * time.Millisecond)
	done := make(chan error, 1)
	if err := p.Send(ctx, router.Record{Topic: "fresh", Partition: -1, Key: []byte("k"), Value: []byte("v"), EventID: "e1"}, func(err error) { done <- err }); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("record to a topic that exists failed: %v", err)
	}
}

// TestPartitionGone: the topic is deleted and created again with fewer
// partitions while the producer still routes by the old count. Records
// for a partition that no longer exists must fail, naming it, instead of
// being retried forever with the confirmed LSN stuck behind them.
func TestPartitionGone(t *testing.T) {
	_, addr := newCluster(t, kfake.SeedTopics(3, "orders"))
	p := newTestProducer(t, fastConfig(addr))
	ctx := context.Background()
	sent := make(chan error, 1)
	if err := p.Send(ctx, router.Record{Topic: "orders", Partition: 2, Value: []byte("before"), EventID: "e1"}, func(err error) { sent <- err }); err != nil {
		t.Fatal(err)
	}
	if err := <-sent; err != nil {
		t.Fatalf("first record: %v", err)
	}
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	cl := &kafka.Client{Addr: kafka.TCP(addr), Transport: tr}
	if res, err := cl.DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: []string{"orders"}}); err != nil || res.Errors["orders"] != nil {
		t.Fatalf("deleting orders: %v %v", err, res)
	}
	if res, err := cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{Topic: "orders", NumPartitions: 1, ReplicationFactor: 1}}}); err != nil || res.Errors["orders"] != nil {
		t.Fatalf("creating orders again: %v %v", err, res)
	}
	if err := p.Send(ctx, router.Record{Topic: "orders", Partition: 2, Value: []byte("after"), EventID: "e2"}, func(err error) { sent <- err }); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-sent:
		if !errors.Is(err, ErrNoSuchPartition) || !strings.Contains(err.Error(), "partition 2") {
			t.Fatalf("record for the vanished partition: %v; want ErrNoSuchPartition naming partition 2", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the record for a partition that no longer exists was still retried after 20 s")
	}
}

// TestLeaderMovesToAnotherBroker (issue 14, wire.go): the partition
// worker's own connection stays with the broker it dialed. After the partition's leader moves, that
// broker answers NOT_LEADER_OR_FOLLOWER; the worker must drop the
// connection, look the leader up again and dial it, not retry the old
// broker for ever. Every record is acknowledged, in order, exactly once.
func TestLeaderMovesToAnotherBroker(t *testing.T) {
	c, addr := newCluster(t, kfake.NumBrokers(3), kfake.SeedTopics(1, "orders"))
	p := newTestProducer(t, fastConfig(addr))
	a := newAcks()
	var ids []string
	send := func(from, to int) {
		for i := from; i < to; i++ {
			id := fmt.Sprintf("e%d", i)
			if err := p.Send(context.Background(), router.Record{Topic: "orders", Partition: 0, Key: []byte("k"), Value: []byte(fmt.Sprintf("seq=%d", i)), EventID: id}, a.cb(id)); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		flush(t, p, 20*time.Second)
	}
	send(0, 10)
	for move := 1; move <= 2; move++ {
		old := c.LeaderFor("orders", 0)
		next := (old + 1) % 3
		if err := c.MoveTopicPartition("orders", 0, next); err != nil {
			t.Fatal(err)
		}
		send(move*10, move*10+10)
		if got := c.LeaderFor("orders", 0); got != next {
			t.Fatalf("leader %d, want %d", got, next)
		}
	}
	deliveredOnceInOrder(t, a, ids, addr)
}

// Regression (issue 14, wire.go): a partition's own connection, unused for
// a while, may have been closed by the broker (connections.max.idle.ms);
// the next batch written to it failed, was logged as a produce failure and
// waited a backoff. A connection idle past the timeout is dialed again
// before it is written to: no failure.
func TestIdleConnectionRedialed(t *testing.T) {
	_, addr := newCluster(t, kfake.SeedTopics(1, "orders"))
	p := newTestProducer(t, fastConfig(addr))
	p.wire.idle = 50 * time.Millisecond
	var mu sync.Mutex
	var conns []net.Conn
	p.transport.Dial = func(ctx context.Context, network, address string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, address)
		if err == nil {
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
		return c, err
	}
	obs := &countingObserver{}
	p.SetObserver(obs)
	a := newAcks()
	send := func(id string) {
		if err := p.Send(context.Background(), router.Record{Topic: "orders", Partition: 0, Key: []byte("k"), Value: []byte(id), EventID: id}, a.cb(id)); err != nil {
			t.Fatal(err)
		}
		flush(t, p, 10*time.Second)
		if err := a.err(id); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	send("before")
	mu.Lock()
	for _, c := range conns { // the broker closes the idle connections
		c.Close()
	}
	mu.Unlock()
	time.Sleep(100 * time.Millisecond)
	send("after")
	if n := obs.failed.Load(); n != 0 {
		t.Fatalf("%d produce failures after the idle connection was closed, want 0", n)
	}
}

type countingObserver struct{ failed atomic.Int32 }

func (o *countingObserver) Produced(records, bytes int)              {}
func (o *countingObserver) ProduceFailed(kind string, retrying bool) { o.failed.Add(1) }

// Regression (issue 27, item 3): the offsets topic was read with the
// producer's kafka.Transport, whose goroutines decode fetch answers: a
// broker answering with a record count of -1 (segmentio/kafka-go#1438)
// panicked there and ended the relay at start-up (Offsets.Load), in both
// delivery modes. Load now returns an error wrapping
// kafkaread.ErrDecoderPanic, naming the topic and the partition.
func TestOffsetsLoadSurvivesDecoderPanic(t *testing.T) {
	c, addr := newCluster(t, kfake.SeedTopics(1, "outboxrelay-offsets"))
	batch, err := hostile.NegativeCountBatch()
	if err != nil {
		t.Fatal(err)
	}
	hostile.Fetches(c, batch)
	p := newTestProducer(t, fastConfig(addr))
	_, _, err = p.Offsets("outboxrelay-offsets", "relay", "order_db", -1).Load(context.Background())
	if !errors.Is(err, kafkaread.ErrDecoderPanic) || !strings.Contains(err.Error(), "outboxrelay-offsets/0") {
		t.Fatalf("Load from a broker answering a record count of -1: %v; want ErrDecoderPanic naming outboxrelay-offsets/0", err)
	}
}
