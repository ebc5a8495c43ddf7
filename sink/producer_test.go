package sink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/outboxrelay/outboxrelay/router"
)

func TestSendKeepsKeyOrderAndPartitions(t *testing.T) {
	_, addr := newCluster(t, kfake.SeedTopics(3, "orders"))
	p := newTestProducer(t, fastConfig(addr))
	a := newAcks()
	ids := sendKeyed(t, p, a, "orders", 20, 50)
	flush(t, p, 20*time.Second)
	a.exactlyOnce(t, ids)
	got := readTopic(t, []string{addr}, "orders")
	checkKeyOrder(t, got, 50)
	checkJavaPartitions(t, got, 3)
}

// Transient produce errors must hold back later records of the partition:
// the failed batch is retried until it succeeds and only then is anything
// after it sent.
func TestOrderKeptAcrossInjectedProduceErrors(t *testing.T) {
	for _, code := range []*kerr.Error{kerr.NotEnoughReplicas, kerr.NotLeaderForPartition, kerr.RequestTimedOut, kerr.UnknownServerError} {
		t.Run(code.Message, func(t *testing.T) {
			c, addr := newCluster(t, kfake.SeedTopics(3, "orders"))
			// Every third produce request fails, twenty times in all, with
			// records of all partitions in flight meanwhile.
			var n atomic.Int64
			c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Err: code, Count: 20,
				When: func(kmsg.Request) bool { return n.Add(1)%3 == 0 }})
			p := newTestProducer(t, fastConfig(addr))
			a := newAcks()
			ids := sendKeyed(t, p, a, "orders", 30, 40)
			flush(t, p, 30*time.Second)
			a.exactlyOnce(t, ids)
			for _, id := range ids {
				if err := a.err(id); err != nil {
					t.Fatalf("event %s failed: %v", id, err)
				}
			}
			// REQUEST_TIMED_OUT is answered after the write, as a real
			// broker may: the retry then duplicates, in order.
			checkFirstDeliveryOrder(t, readTopic(t, []string{addr}, "orders"), 40, code == kerr.RequestTimedOut)
		})
	}
}

// A broker that drops every connection for a while (an outage) and comes
// back: nothing is acknowledged during the outage, everything after, in
// order, exactly once.
func TestBrokerDownThenBack(t *testing.T) {
	c, addr := newCluster(t, kfake.SeedTopics(3, "orders"))
	p := newTestProducer(t, fastConfig(addr))

	// Warm up so the metadata is cached, as in a running relay.
	a := newAcks()
	var ids []string
	if err := p.Send(context.Background(), router.Record{Topic: "orders", Partition: -1, Key: []byte("key-0"), Value: []byte("seq=0"), EventID: "warm"}, a.cb("warm")); err != nil {
		t.Fatal(err)
	}
	flush(t, p, 10*time.Second)

	var down atomic.Bool
	down.Store(true)
	c.Control(func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if down.Load() {
			return nil, errors.New("broker down"), true // closes the connection
		}
		return nil, nil, false
	})
	ctx := context.Background()
	for i := 1; i <= 30; i++ {
		for k := 0; k < 10; k++ {
			id := fmt.Sprintf("k%d-%d", k, i)
			if err := p.Send(ctx, router.Record{Topic: "orders", Partition: -1, Key: []byte(fmt.Sprintf("key-%d", k)), Value: []byte(fmt.Sprintf("seq=%d", i)), EventID: id}, a.cb(id)); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
	}
	time.Sleep(300 * time.Millisecond)
	if n, _ := p.InFlight(); n != len(ids) {
		t.Fatalf("%d records in flight during the outage, want all %d unacknowledged", n, len(ids))
	}
	down.Store(false)
	flush(t, p, 30*time.Second)
	a.exactlyOnce(t, append(ids, "warm"))
	got := readTopic(t, []string{addr}, "orders")
	seen := map[string]int{}
	for _, msgs := range got {
		for _, m := range msgs {
			var seq int
			fmt.Sscanf(string(m.Value), "seq=%d", &seq)
			k := string(m.Key)
			if last, ok := seen[k]; ok && seq != last+1 {
				t.Fatalf("key %s: seq %d after %d", k, seq, last)
			}
			seen[k] = seq
		}
	}
	for k := 0; k < 10; k++ {
		if seen[fmt.Sprintf("key-%d", k)] != 30 {
			t.Fatalf("key-%d ends at seq %d, want 30", k, seen[fmt.Sprintf("key-%d", k)])
		}
	}
}

func TestRecordOverMaxRequestSizeRefusedBeforeSending(t *testing.T) {
	_, addr := newCluster(t, kfake.SeedTopics(1, "orders"))
	cfg := fastConfig(addr)
	cfg.MaxRequestSize = 10_000
	p := newTestProducer(t, cfg)
	err := p.Send(context.Background(), router.Record{Topic: "orders", Partition: -1, Key: []byte("k"), Value: make([]byte, 10_000), EventID: "ev-big"}, func(error) {
		t.Error("onAck called for a record Send refused")
	})
	var re *RecordError
	if !errors.As(err, &re) || !errors.Is(err, ErrRecordTooLarge) {
		t.Fatalf("Send = %v, want a *RecordError wrapping ErrRecordTooLarge", err)
	}
	for _, want := range []string{`"ev-big"`, `"orders"`, "max.request.size"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}

// MESSAGE_TOO_LARGE from the broker (a topic whose max.message.bytes is
// below max.request.size) is fatal for the refused record only: the batch
// is resent one record at a time, the others succeed, in order.
func TestBrokerMessageTooLargeFailsOnlyThatRecord(t *testing.T) {
	c, addr := newCluster(t, kfake.SeedTopics(1, "orders"))
	c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		pr := req.(*kmsg.ProduceRequest)
		if !bytes.Contains(pr.Topics[0].Partitions[0].Records, []byte("POISON")) {
			return nil, nil, false
		}
		resp := pr.ResponseKind().(*kmsg.ProduceResponse)
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = pr.Topics[0].Topic
		rp := kmsg.NewProduceResponseTopicPartition()
		rp.Partition = pr.Topics[0].Partitions[0].Partition
		rp.ErrorCode = kerr.MessageTooLarge.Code
		rt.Partitions = append(rt.Partitions, rp)
		resp.Topics = append(resp.Topics, rt)
		return resp, nil, true
	})
	cfg := fastConfig(addr)
	cfg.Linger = 50 * time.Millisecond // one batch for all records
	p := newTestProducer(t, cfg)
	a := newAcks()
	var ids []string
	for i := 0; i < 10; i++ {
		id := fmt.Sprintf("ev-%d", i)
		v := fmt.Sprintf("seq=%d", i)
		if i == 4 {
			v = "POISON"
		}
		if err := p.Send(context.Background(), router.Record{Topic: "orders", Partition: -1, Key: []byte("k"), Value: []byte(v), EventID: id}, a.cb(id)); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	flush(t, p, 10*time.Second)
	a.exactlyOnce(t, ids)
	err := a.err("ev-4")
	var re *RecordError
	if !errors.As(err, &re) || !errors.Is(err, kafka.MessageSizeTooLarge) || re.EventID != "ev-4" || re.Topic != "orders" {
		t.Fatalf("ev-4: %v, want a *RecordError for ev-4 wrapping MessageSizeTooLarge", err)
	}
	if !strings.Contains(err.Error(), "max.message.bytes") {
		t.Errorf("error %q does not say which setting to check", err)
	}
	for _, id := range ids {
		if id != "ev-4" && a.err(id) != nil {
			t.Errorf("%s: %v", id, a.err(id))
		}
	}
	got := readTopic(t, []string{addr}, "orders")[0]
	var vals []string
	for _, m := range got {
		vals = append(vals, string(m.Value))
	}
	want := "seq=0 seq=1 seq=2 seq=3 seq=5 seq=6 seq=7 seq=8 seq=9"
	if strings.Join(vals, " ") != want {
		t.Fatalf("partition holds %v, want %s", vals, want)
	}
}

func TestMissingTopicIsAClearError(t *testing.T) {
	_, addr := newCluster(t) // kfake does not auto-create topics
	p := newTestProducer(t, fastConfig(addr))
	a := newAcks()
	if err := p.Send(context.Background(), router.Record{Topic: "outbox.event.nope", Partition: -1, Key: []byte("k"), EventID: "ev-1"}, a.cb("ev-1")); err != nil {
		t.Fatal(err)
	}
	flush(t, p, 10*time.Second)
	err := a.err("ev-1")
	if !errors.Is(err, ErrTopicMissing) {
		t.Fatalf("got %v, want ErrTopicMissing", err)
	}
	for _, want := range []string{"outbox.event.nope", KeyTopicPartitions, KeyTopicReplication, `"ev-1"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if _, err := p.EnsureTopic(context.Background(), "outbox.event.nope"); !errors.Is(err, ErrTopicMissing) {
		t.Errorf("EnsureTopic: %v, want ErrTopicMissing", err)
	}
}

func TestMissingTopicCreatedWhenConfigured(t *testing.T) {
	_, addr := newCluster(t)
	cfg := fastConfig(addr)
	cfg.TopicPartitions, cfg.TopicReplicationFactor = 3, -1
	p := newTestProducer(t, cfg)
	a := newAcks()
	ids := sendKeyed(t, p, a, "outbox.event.order", 10, 5)
	flush(t, p, 10*time.Second)
	a.exactlyOnce(t, ids)
	for _, id := range ids {
		if err := a.err(id); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	if n, err := p.EnsureTopic(context.Background(), "outbox.event.order"); err != nil || n != 3 {
		t.Fatalf("EnsureTopic = %d, %v; want 3 partitions", n, err)
	}
	checkKeyOrder(t, readTopic(t, []string{addr}, "outbox.event.order"), 5)
}

func TestExplicitPartition(t *testing.T) {
	_, addr := newCluster(t, kfake.SeedTopics(3, "orders"))
	p := newTestProducer(t, fastConfig(addr))
	a := newAcks()
	ctx := context.Background()
	for i, part := range []int{2, 2, 0, 7} {
		id := fmt.Sprintf("ev-%d", i)
		if err := p.Send(ctx, router.Record{Topic: "orders", Partition: part, Key: []byte("same-key"), Value: []byte("v"), EventID: id}, a.cb(id)); err != nil {
			t.Fatal(err)
		}
	}
	flush(t, p, 10*time.Second)
	if err := a.err("ev-3"); !errors.Is(err, ErrNoSuchPartition) {
		t.Fatalf("partition 7 of a 3-partition topic: %v, want ErrNoSuchPartition", err)
	}
	got := readTopic(t, []string{addr}, "orders")
	if len(got[2]) != 2 || len(got[0]) != 1 || len(got[1]) != 0 {
		t.Fatalf("partition counts 0:%d 1:%d 2:%d, want 1 0 2", len(got[0]), len(got[1]), len(got[2]))
	}
}

// Send copies the record: a caller reusing its buffer must not change what
// is sent.
func TestSendCopiesCallerBuffers(t *testing.T) {
	_, addr := newCluster(t, kfake.SeedTopics(1, "orders"))
	cfg := fastConfig(addr)
	cfg.Linger = 50 * time.Millisecond
	p := newTestProducer(t, cfg)
	a := newAcks()
	buf := []byte("seq=0")
	hdr := []byte("h0")
	for i := 0; i < 3; i++ {
		copy(buf, fmt.Sprintf("seq=%d", i))
		copy(hdr, fmt.Sprintf("h%d", i))
		id := fmt.Sprint(i)
		if err := p.Send(context.Background(), router.Record{Topic: "orders", Partition: -1, Key: buf[:3], Value: buf, Headers: []router.Header{{Key: "id", Value: hdr}, {Key: "null", Value: nil}}, EventID: id}, a.cb(id)); err != nil {
			t.Fatal(err)
		}
	}
	flush(t, p, 10*time.Second)
	got := readTopic(t, []string{addr}, "orders")[0]
	for i, m := range got {
		if string(m.Value) != fmt.Sprintf("seq=%d", i) || string(m.Headers[0].Value) != fmt.Sprintf("h%d", i) {
			t.Fatalf("record %d: value %q header %q", i, m.Value, m.Headers[0].Value)
		}
		if m.Headers[1].Value != nil {
			t.Fatalf("null header value came back as %q", m.Headers[1].Value)
		}
	}
}

func TestNullKeyAndNullValue(t *testing.T) {
	_, addr := newCluster(t, kfake.SeedTopics(3, "orders"))
	p := newTestProducer(t, fastConfig(addr))
	a := newAcks()
	for i := 0; i < 20; i++ {
		id := fmt.Sprint(i)
		if err := p.Send(context.Background(), router.Record{Topic: "orders", Partition: -1, Value: []byte("v"), EventID: id}, a.cb(id)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Send(context.Background(), router.Record{Topic: "orders", Partition: -1, Key: []byte("tomb"), EventID: "tomb"}, a.cb("tomb")); err != nil {
		t.Fatal(err)
	}
	flush(t, p, 10*time.Second)
	total := 0
	for _, msgs := range readTopic(t, []string{addr}, "orders") {
		for _, m := range msgs {
			total++
			if string(m.Key) == "tomb" && m.Value != nil {
				t.Errorf("tombstone value %q, want null", m.Value)
			}
			if string(m.Key) != "tomb" && m.Key != nil {
				t.Errorf("null key came back as %q", m.Key)
			}
		}
	}
	if total != 21 {
		t.Fatalf("%d records read, want 21", total)
	}
}

// Close during an outage fails what is still pending with ErrClosed, once,
// and leaves no goroutine of the producer or of kafka-go behind.
func TestCloseAcksPendingAndLeavesNoGoroutines(t *testing.T) {
	c, addr := newCluster(t, kfake.SeedTopics(3, "orders"))
	p, err := NewProducer(fastConfig(addr), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	a := newAcks()
	ids := sendKeyed(t, p, a, "orders", 5, 5)
	flush(t, p, 10*time.Second)
	c.Control(func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		return nil, errors.New("down"), true
	})
	more := []string{}
	for i := 0; i < 10; i++ {
		id := fmt.Sprintf("late-%d", i)
		if err := p.Send(context.Background(), router.Record{Topic: "orders", Partition: -1, Key: []byte("k"), Value: []byte("v"), EventID: id}, a.cb(id)); err != nil {
			t.Fatal(err)
		}
		more = append(more, id)
	}
	time.Sleep(100 * time.Millisecond)
	p.Close()
	a.exactlyOnce(t, append(ids, more...))
	for _, id := range more {
		if !errors.Is(a.err(id), ErrClosed) {
			t.Errorf("%s: %v, want ErrClosed", id, a.err(id))
		}
	}
	if err := p.Send(context.Background(), router.Record{Topic: "orders", Partition: -1}, func(error) {}); !errors.Is(err, ErrClosed) {
		t.Errorf("Send after Close: %v, want ErrClosed", err)
	}
	checkNoLeaks(t)
}

// checkNoLeaks waits briefly for goroutines of this package and of kafka-go
// to finish, then fails listing those still running.
func checkNoLeaks(t *testing.T) {
	t.Helper()
	var stacks string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		buf := make([]byte, 1<<20)
		all := string(buf[:runtime.Stack(buf, true)])
		stacks = ""
		for _, g := range strings.Split(all, "\n\n") {
			if strings.Contains(g, "outboxrelay/sink.(") && !strings.Contains(g, "testing.tRunner") || strings.Contains(g, "segmentio/kafka-go") {
				stacks += g + "\n\n"
			}
		}
		if stacks == "" {
			return
		}
	}
	t.Fatalf("goroutines left after Close:\n%s", stacks)
}

func TestSendBlocksWhenBufferFull(t *testing.T) {
	c, addr := newCluster(t, kfake.SeedTopics(1, "orders"))
	cfg := fastConfig(addr)
	cfg.BufferMemory = 4096
	cfg.MaxRequestSize = 2048
	p := newTestProducer(t, cfg)
	var down atomic.Bool
	down.Store(true)
	c.Control(func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if down.Load() {
			return nil, errors.New("down"), true
		}
		return nil, nil, false
	})
	a := newAcks()
	sent := 0
	for ; sent < 100; sent++ {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		id := fmt.Sprint(sent)
		err := p.Send(ctx, router.Record{Topic: "orders", Partition: -1, Key: []byte("k"), Value: make([]byte, 500), EventID: id}, a.cb(id))
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, b := p.InFlight(); sent == 100 || b > cfg.BufferMemory {
		t.Fatalf("sent %d records, %d bytes in flight: buffer.memory not enforced", sent, b)
	}
	down.Store(false)
	flush(t, p, 10*time.Second)
}

// Placed tells each record where Kafka wrote it, before its ack, on the
// acknowledging goroutine: the offsets read back from the topic.
func TestPlacedReportsPartitionAndOffset(t *testing.T) {
	_, addr := newCluster(t, kfake.SeedTopics(2, "orders"))
	p := newTestProducer(t, fastConfig(addr))
	type place struct {
		partition int
		offset    int64
		beforeAck bool
	}
	places := make([]place, 6)
	acked := make([]atomic.Bool, 6)
	done := make(chan error, 6)
	for i := range places {
		rec := router.Record{Topic: "orders", Partition: i % 2, Key: fmt.Appendf(nil, "k%d", i), Value: []byte("v"), EventID: fmt.Sprintf("ev-%d", i)}
		rec.Placed = func(partition int, offset int64) {
			places[i] = place{partition, offset, !acked[i].Load()}
		}
		if err := p.Send(context.Background(), rec, func(err error) { acked[i].Store(true); done <- err }); err != nil {
			t.Fatal(err)
		}
	}
	for range places {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	got := readTopic(t, []string{addr}, "orders")
	for i, pl := range places {
		if !pl.beforeAck || pl.partition != i%2 {
			t.Fatalf("record %d placed %+v, want partition %d before its ack", i, pl, i%2)
		}
		m := got[pl.partition][i/2]
		if string(m.Key) != fmt.Sprintf("k%d", i) || m.Offset != pl.offset {
			t.Errorf("record %d placed at %d/%d, but that offset holds key %q (offset %d)", i, pl.partition, pl.offset, m.Key, m.Offset)
		}
	}
}
