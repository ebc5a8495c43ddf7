package sink

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/outboxrelay/outboxrelay/router"
)

// Regression (review of issue 14c, finding 1; wire.go): a partition's own
// connection stayed with a broker that no longer led the partition as long
// as that broker answered an error other than NOT_LEADER_OR_FOLLOWER, here
// KAFKA_STORAGE_ERROR as a deposed leader with an offline log dir answers:
// the partition was stuck for good (421 refusals in 20 s). Any refused
// answer now drops the connection, and the retry dials the leader named by
// metadata fetched afresh.
func TestDeposedLeaderStorageErrorRedialed(t *testing.T) {
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
	send(0, 5)
	old := c.LeaderFor("orders", 0)
	var refused atomic.Int32
	c.ControlKey(int16(kmsg.Produce), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if c.CurrentNode() != old {
			return nil, nil, false
		}
		req := kreq.(*kmsg.ProduceRequest)
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewProduceResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewProduceResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, int16(kafka.KafkaStorageError)
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		refused.Add(1)
		return resp, nil, true
	})
	if err := c.MoveTopicPartition("orders", 0, (old+1)%3); err != nil {
		t.Fatal(err)
	}
	send(5, 10)
	if refused.Load() == 0 {
		t.Fatal("the old leader refused nothing: the test did not reach its case")
	}
	deliveredOnceInOrder(t, a, ids, addr)
}

// Regression (review of issue 14c, finding 3; wire.go): dialBroker's ctx
// ending did not interrupt ApiVersions or SASL, only the dial timeout did
// (10 s against a listener that accepts and never answers), and Close waits
// for the workers. A cancelled dial now returns at once from each step.
func TestDialBrokerCancelled(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { silent.Close() })
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	c, kaddr := newCluster(t)
	c.ControlKey(int16(kmsg.SASLHandshake), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		return nil, nil, true // never answered
	})
	for _, tc := range []struct {
		name, addr string
		set        func(*kafka.Transport)
	}{
		{"ApiVersions unanswered", silent.Addr().String(), func(*kafka.Transport) {}},
		{"TLS handshake unanswered", silent.Addr().String(), func(tr *kafka.Transport) { tr.TLS = &tls.Config{} }},
		{"SASL unanswered", kaddr, func(tr *kafka.Transport) { tr.SASL = plain.Mechanism{Username: "u", Password: "p"} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newTestProducer(t, fastConfig(kaddr))
			p.transport.DialTimeout = time.Minute
			tc.set(p.transport)
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(100*time.Millisecond, cancel)
			start := time.Now()
			pc, err := p.dialBroker(ctx, tc.addr)
			if pc != nil {
				pc.Close()
			}
			if took := time.Since(start); err == nil || !errors.Is(err, context.Canceled) || took > 5*time.Second {
				t.Fatalf("cancelled dial returned after %v: %v; want context.Canceled at once", took, err)
			}
		})
	}
}

// TestDialBrokerOldProduceVersion: a broker that speaks Produce only below
// v3 (Kafka before 0.11) cannot take record batches; the dial fails saying
// so, and the error is not retried.
func TestDialBrokerOldProduceVersion(t *testing.T) {
	c, addr := newCluster(t)
	c.ControlKey(int16(kmsg.ApiVersions), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		resp := kreq.(*kmsg.ApiVersionsRequest).ResponseKind().(*kmsg.ApiVersionsResponse)
		for _, k := range []struct{ key, max int16 }{{int16(kmsg.Produce), 2}, {int16(kmsg.Metadata), 1}, {int16(kmsg.ApiVersions), 3}} {
			v := kmsg.NewApiVersionsResponseApiKey()
			v.ApiKey, v.MaxVersion = k.key, k.max
			resp.ApiKeys = append(resp.ApiKeys, v)
		}
		return resp, nil, true
	})
	p := newTestProducer(t, fastConfig(addr))
	pc, err := p.dialBroker(context.Background(), addr)
	if pc != nil {
		pc.Close()
	}
	if err == nil || !errors.Is(err, kafka.UnsupportedVersion) || retryable(err) || !strings.Contains(err.Error(), "Produce up to v2") {
		t.Fatalf("dial of a broker speaking Produce v2: %v; want UnsupportedVersion, not retried, naming v2", err)
	}
}

// TestAckTimeoutBelowDeadline: the broker's acks timeout is less than the
// client's wait, so the broker's REQUEST_TIMED_OUT answer arrives in time.
func TestAckTimeoutBelowDeadline(t *testing.T) {
	for _, tc := range []struct{ d, want time.Duration }{
		{30 * time.Second, 29 * time.Second},
		{5 * time.Second, 4500 * time.Millisecond},
		{100 * time.Millisecond, 90 * time.Millisecond},
		{time.Millisecond, time.Millisecond},
		{0, time.Millisecond},
	} {
		if got := ackTimeout(tc.d); got != tc.want {
			t.Errorf("ackTimeout(%v) = %v, want %v", tc.d, got, tc.want)
		}
	}
}

// Regression (review of issue 14c, finding 13; wire.go): Close closed the
// partitions' connections in AfterFunc goroutines, so it could return
// before they were closed, and kept them in its map. Close now drops each
// one after the workers stopped: none is open when it returns.
func TestCloseClosesConnections(t *testing.T) {
	_, addr := newCluster(t, kfake.SeedTopics(2, "orders"))
	p := newTestProducer(t, fastConfig(addr))
	a := newAcks()
	for i := range 2 {
		id := fmt.Sprint("e", i)
		if err := p.Send(context.Background(), router.Record{Topic: "orders", Partition: i, Value: []byte("v"), EventID: id}, a.cb(id)); err != nil {
			t.Fatal(err)
		}
	}
	flush(t, p, 10*time.Second)
	p.Close()
	p.wire.mu.Lock()
	defer p.wire.mu.Unlock()
	if len(p.wire.m) != 2 {
		t.Fatalf("%d partition connections, want 2", len(p.wire.m))
	}
	for tp, c := range p.wire.m {
		if c.pc != nil {
			t.Errorf("%s/%d: connection still open after Close", tp.topic, tp.partition)
		}
	}
}
