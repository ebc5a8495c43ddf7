package sink

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/outboxrelay/outboxrelay/capture"
	"github.com/outboxrelay/outboxrelay/internal/kafkabatch"
	"github.com/outboxrelay/outboxrelay/internal/testbed"
	"github.com/outboxrelay/outboxrelay/router"
)

// TestOffsetsRoundTrip on the bed's Kafka: a first Load creates the topic
// compacted and finds nothing; saved positions read back, the last one
// wins, another connector's key is not ours, and a tombstone deletes it.
func TestOffsetsRoundTrip(t *testing.T) {
	brokers := strings.Split(testbed.KafkaBrokers(t), ",")
	p := newTestProducer(t, Config{Brokers: brokers})
	topic := fmt.Sprintf("offsets-test-%d", time.Now().UnixNano())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	o := p.Offsets(topic, "orders-outbox", "order_db", -1)
	if _, found, err := o.Load(ctx); err != nil || found {
		t.Fatalf("first Load: found %v, err %v; want nothing, no error", found, err)
	}
	if policy, err := p.TopicConfig(ctx, topic, "cleanup.policy"); err != nil || policy != "compact" {
		t.Fatalf("the offsets topic's cleanup.policy is %q (%v); want compact", policy, err)
	}
	other := p.Offsets(topic, "another-connector", "order_db", -1)
	a := newAcks()
	for i, pos := range []capture.LSN{0x100, 0x200, 0x300} {
		if err := o.Save(ctx, Offset{LSN: pos, Time: time.UnixMicro(int64(1000 + i))}, a.cb(fmt.Sprint(pos))); err != nil {
			t.Fatal(err)
		}
	}
	if err := other.Save(ctx, Offset{LSN: 0x999, Time: time.UnixMicro(5000)}, a.cb("other")); err != nil {
		t.Fatal(err)
	}
	flush(t, p, 30*time.Second)
	pos, found, err := p.Offsets(topic, "orders-outbox", "order_db", -1).Load(ctx)
	if err != nil || !found || pos.LSN != 0x300 || pos.Time.UnixMicro() != 1002 {
		t.Fatalf("Load = %+v, found %v, err %v; want the last saved position 0x300", pos, found, err)
	}
	if o.Key() != `["orders-outbox",{"server":"order_db"}]` {
		t.Errorf("key %s; want Connect's source offset key", o.Key())
	}
	if err := p.Send(ctx, router.Record{Topic: topic, Partition: -1, Key: []byte(o.Key())}, a.cb("tombstone")); err != nil {
		t.Fatal(err)
	}
	flush(t, p, 30*time.Second)
	if _, found, err := o.Load(ctx); err != nil || found {
		t.Fatalf("Load after a tombstone: found %v, err %v; want nothing", found, err)
	}
}

// Regression (bench-eos, 2026-12-02): Load (then LoadCommitted) read the offsets topic
// from its start, and a transactional sink writes a position per Kafka
// transaction: after a few minutes of exactly-once at 1,000 events/s a
// start spent 2.3 s and 54 MiB of RSS reading it. It now reads back from
// the end, a window widening only while it holds nothing under the key;
// the answers stay those of a read from the start: the last position
// under the key, however far back; nothing after a tombstone; nothing for
// a key never written.
func TestLoadReadsBackFromTheEnd(t *testing.T) {
	brokers := strings.Split(testbed.KafkaBrokers(t), ",")
	p := newTestProducer(t, Config{Brokers: brokers})
	topic := fmt.Sprintf("offsets-window-%d", time.Now().UnixNano())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	store := func(connector string) *Offsets {
		o := p.Offsets(topic, connector, "order_db", -1)
		o.window = 4
		return o
	}
	if _, found, err := store("early").Load(ctx); err != nil || found {
		t.Fatalf("first Load: found %v, err %v; want nothing", found, err)
	}
	a := newAcks()
	save := func(connector string, lsn capture.LSN) {
		t.Helper()
		if err := store(connector).Save(ctx, Offset{LSN: lsn, Time: time.UnixMicro(int64(lsn))}, a.cb(fmt.Sprint(connector, lsn))); err != nil {
			t.Fatal(err)
		}
		flush(t, p, 30*time.Second) // a batch each: a fetch from a window's start returns no older one
	}
	save("early", 0x10) // offset 0; a window of 4, then 16, then 64 offsets reach it
	save("gone", 0x20)
	for i := range 60 {
		save("busy", capture.LSN(0x100+i))
	}
	if err := p.Send(ctx, router.Record{Topic: topic, Partition: -1, Key: []byte(store("gone").Key())}, a.cb("tombstone")); err != nil {
		t.Fatal(err)
	}
	flush(t, p, 30*time.Second)
	for _, tc := range []struct {
		connector string
		found     bool
		lsn       capture.LSN
	}{{"early", true, 0x10}, {"busy", true, 0x100 + 59}, {"gone", false, 0}, {"never", false, 0}} {
		pos, found, err := store(tc.connector).Load(ctx)
		if err != nil || found != tc.found || pos.LSN != tc.lsn {
			t.Errorf("Load(%s) = %#x, found %v, err %v; want %#x, found %v", tc.connector, pos.LSN, found, err, tc.lsn, tc.found)
		}
	}
}

// TestLoadSkipsAbortedPositions: positions written in aborted
// Kafka transactions never count, also when a window of the read back
// from the end starts inside one (between its two batches, or at its
// marker): the last committed position is found behind them (review of
// the read back from the end, N3.1).
func TestLoadSkipsAbortedPositions(t *testing.T) {
	p := txnBedProducer(t)
	topic := fmt.Sprintf("offsets-aborted-%d", time.Now().UnixNano())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	o := p.Offsets(topic, "relay", "order_db", -1)
	if _, found, err := o.Load(ctx); err != nil || found {
		t.Fatalf("first Load: found %v, err %v; want nothing", found, err)
	}
	a := newAcks()
	if err := o.Save(ctx, Offset{LSN: 0x10, Time: time.UnixMicro(0x10)}, a.cb("committed")); err != nil {
		t.Fatal(err)
	}
	flush(t, p, 30*time.Second)
	txn, err := kafkabatch.NewTxnProducer(p.client, kafkabatch.TxnProducerConfig{TransactionalID: topic}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := txn.Init(ctx); err != nil {
		t.Fatal(err)
	}
	tp := kafkabatch.TopicPartition{Topic: topic}
	for i := range 5 { // each: two batches and the abort marker, 3 offsets
		if err := txn.Begin(); err != nil {
			t.Fatal(err)
		}
		for j := range 2 {
			v, err := o.value(Offset{LSN: capture.LSN(0x100 + 2*i + j), Time: time.Now()})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := txn.Produce(ctx, tp, []kafkabatch.Message{{Key: o.key, Value: v}}); err != nil {
				t.Fatal(err)
			}
		}
		if err := txn.Abort(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, window := range []int64{1, 2, 3, 4, 1000} {
		o := p.Offsets(topic, "relay", "order_db", -1)
		o.window = window
		pos, found, err := o.Load(ctx)
		if err != nil || !found || pos.LSN != 0x10 {
			t.Errorf("window %d: Load = %#x, found %v, err %v; want the committed 0x10", window, pos.LSN, found, err)
		}
	}
}
