package sink

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/outboxrelay/outboxrelay/internal/kafkabatch"
)

// sentBatch is a produce request's batch as the broker received it.
type sentBatch struct {
	raw   []byte
	batch kafkabatch.Batch
}

// watchProduce records every produce request's batch kfake receives,
// whatever its answer.
func watchProduce(t *testing.T, c *kfake.Cluster) func() []sentBatch {
	var mu sync.Mutex
	var got []sentBatch
	c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		raw := bytes.Clone(req.(*kmsg.ProduceRequest).Topics[0].Partitions[0].Records)
		b, _, err := kafkabatch.Decode(raw)
		if err != nil {
			t.Errorf("decoding a produce request's batch: %v", err)
		}
		mu.Lock()
		got = append(got, sentBatch{raw: raw, batch: b})
		mu.Unlock()
		return nil, nil, false
	})
	return func() []sentBatch {
		mu.Lock()
		defer mu.Unlock()
		return append([]sentBatch(nil), got...)
	}
}

// sendBatch sends n records to partition 0 of topic and waits for them, so
// that they leave as one batch.
func sendBatch(t *testing.T, p *Producer, a *acks, topic, prefix string, n int) []string {
	t.Helper()
	var ids []string
	for i := range n {
		id := fmt.Sprintf("%s-%d", prefix, i)
		if err := p.Send(context.Background(), Record{Topic: topic, Partition: 0, Key: []byte("k"), Value: []byte(id), EventID: id}, a.cb(id)); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	flush(t, p, 20*time.Second)
	return ids
}

// values reads partition 0 of topic back.
func values(t *testing.T, addr, topic string) []string {
	t.Helper()
	var out []string
	for _, m := range readTopic(t, []string{addr}, topic)[0] {
		out = append(out, string(m.Value))
	}
	return out
}

// TestIdempotentSequenceAdvances: one producer id from InitProducerId, the
// partition's base sequence advanced by each acknowledged batch's records.
func TestIdempotentSequenceAdvances(t *testing.T) {
	c, addr := newCluster(t, kfake.SeedTopics(1, "orders"))
	sent := watchProduce(t, c)
	p := newTestProducer(t, batchConfig(addr, true))
	a := newAcks()
	var ids []string
	for i, n := range []int{3, 5, 2} {
		ids = append(ids, sendBatch(t, p, a, "orders", fmt.Sprint("b", i), n)...)
	}
	a.exactlyOnce(t, ids)
	got := sent()
	if len(got) != 3 {
		t.Fatalf("%d produce requests, want 3", len(got))
	}
	for i, want := range []int32{0, 3, 8} {
		b := got[i].batch
		if b.ProducerID < 0 || b.ProducerID != got[0].batch.ProducerID || b.ProducerEpoch != got[0].batch.ProducerEpoch || b.BaseSequence != want {
			t.Errorf("batch %d: producer %d epoch %d base sequence %d; want the first batch's producer and epoch, sequence %d",
				i, b.ProducerID, b.ProducerEpoch, b.BaseSequence, want)
		}
	}
	if v := values(t, addr, "orders"); strings.Join(v, " ") != strings.Join(ids, " ") {
		t.Errorf("partition holds %v, want %v", v, ids)
	}
}

// TestIdempotentRetryResendsSameBytes: a produce the broker wrote but
// answered with an error (REQUEST_TIMED_OUT after the append, as kfake and
// a real broker can) is resent byte for byte, and the broker keeps one
// copy. Without idempotence the same retry writes the batch twice.
func TestIdempotentRetryResendsSameBytes(t *testing.T) {
	for _, idempotent := range []bool{true, false} {
		t.Run(fmt.Sprint("idempotent=", idempotent), func(t *testing.T) {
			c, addr := newCluster(t, kfake.SeedTopics(1, "orders"))
			sent := watchProduce(t, c)
			c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Err: kerr.RequestTimedOut, Count: 1})
			p := newTestProducer(t, batchConfig(addr, idempotent))
			a := newAcks()
			ids := sendBatch(t, p, a, "orders", "ev", 4)
			a.exactlyOnce(t, ids)
			got := sent()
			if len(got) != 2 || !bytes.Equal(got[0].raw, got[1].raw) {
				t.Fatalf("%d produce requests; want 2 with the same bytes", len(got))
			}
			if idempotent != (got[0].batch.ProducerID >= 0) {
				t.Errorf("producer id %d with idempotence %v", got[0].batch.ProducerID, idempotent)
			}
			checkWritten(t, addr, "orders", ids, idempotent)
		})
	}
}

// TestIdempotentLostAnswerNotDuplicated: the connection breaks after the
// broker took a produce request and before its answer arrives. The retry
// (a new connection, the same bytes) is kept once by the broker; without
// idempotence it writes the batch twice.
func TestIdempotentLostAnswerNotDuplicated(t *testing.T) {
	for _, idempotent := range []bool{true, false} {
		t.Run(fmt.Sprint("idempotent=", idempotent), func(t *testing.T) {
			_, addr := newCluster(t, kfake.SeedTopics(1, "orders"))
			checkLostAnswer(t, batchConfig(addr, idempotent), "orders", idempotent)
		})
	}
}

// checkLostAnswer sends a batch whose first answer is lost and checks the
// topic holds it once with idempotence, twice without.
func checkLostAnswer(t *testing.T, cfg Config, topic string, idempotent bool) {
	t.Helper()
	p := newTestProducer(t, cfg)
	var l answerLoser
	l.left.Store(1)
	l.install(p)
	a := newAcks()
	ids := sendBatch(t, p, a, topic, "ev", 5)
	a.exactlyOnce(t, ids)
	for _, id := range ids {
		if err := a.err(id); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	if l.lost.Load() != 1 {
		t.Fatalf("%d produce answers lost, want 1", l.lost.Load())
	}
	checkWritten(t, cfg.Brokers[0], topic, ids, idempotent)
}

// checkWritten checks that partition 0 of topic holds ids once if the
// producer was idempotent, twice (the batch resent) if not.
func checkWritten(t *testing.T, addr, topic string, ids []string, idempotent bool) {
	t.Helper()
	want := ids
	if !idempotent {
		want = append(append([]string(nil), ids...), ids...)
	}
	if v := values(t, addr, topic); strings.Join(v, " ") != strings.Join(want, " ") {
		t.Errorf("partition holds %v, want %v", v, want)
	}
}

// batchConfig is fastConfig with a linger that keeps a test's records in one batch.
func batchConfig(addr string, idempotent bool) Config {
	cfg := fastConfig(addr)
	cfg.Linger = 20 * time.Millisecond
	cfg.DisableIdempotence = !idempotent
	return cfg
}

// TestIdempotentOutOfOrderBumpsEpoch: OUT_OF_ORDER_SEQUENCE_NUMBER (or
// UNKNOWN_PRODUCER_ID: the broker lost the producer's state) makes the
// producer bump its epoch, as Java's idempotent producer does since
// KIP-360, and resend the batch from sequence 0; the next batch follows on.
func TestIdempotentOutOfOrderBumpsEpoch(t *testing.T) {
	for _, code := range []*kerr.Error{kerr.OutOfOrderSequenceNumber, kerr.UnknownProducerID} {
		t.Run(code.Message, func(t *testing.T) {
			c, addr := newCluster(t, kfake.SeedTopics(1, "orders"))
			sent := watchProduce(t, c)
			p := newTestProducer(t, batchConfig(addr, true))
			a := newAcks()
			ids := sendBatch(t, p, a, "orders", "a", 3)
			c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Err: code, Count: 1})
			ids = append(ids, sendBatch(t, p, a, "orders", "b", 2)...)
			ids = append(ids, sendBatch(t, p, a, "orders", "c", 2)...)
			a.exactlyOnce(t, ids)
			got := sent()
			if len(got) != 4 {
				t.Fatalf("%d produce requests, want 4", len(got))
			}
			first := got[0].batch
			type stamp struct {
				id    int64
				epoch int16
				seq   int32
			}
			want := []stamp{{first.ProducerID, first.ProducerEpoch, 0}, {first.ProducerID, first.ProducerEpoch, 3},
				{first.ProducerID, first.ProducerEpoch + 1, 0}, {first.ProducerID, first.ProducerEpoch + 1, 2}}
			for i, w := range want {
				b := got[i].batch
				if g := (stamp{b.ProducerID, b.ProducerEpoch, b.BaseSequence}); g != w {
					t.Errorf("request %d: producer, epoch, sequence %v; want %v", i, g, w)
				}
			}
			if v := values(t, addr, "orders"); strings.Join(v, " ") != strings.Join(ids, " ") {
				t.Errorf("partition holds %v, want %v", v, ids)
			}
		})
	}
}

// TestIdempotenceBumpOnceAndBounded: partitions failing on one epoch bump
// it once, whatever their number; at the last epoch the producer asks for
// a new id instead.
func TestIdempotenceBumpOnceAndBounded(t *testing.T) {
	_, addr := newCluster(t)
	p := newTestProducer(t, fastConfig(addr))
	ctx := context.Background()
	start, err := p.idem.current(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { p.idem.bump(start) })
	}
	wg.Wait()
	if cur, _ := p.idem.current(ctx); cur != (producerEpoch{start.id, start.epoch + 1}) {
		t.Fatalf("after 8 bumps from %v: %v, want one epoch more", start, cur)
	}
	last := producerEpoch{start.id, math.MaxInt16}
	p.idem.cur = last
	p.idem.bump(last)
	cur, err := p.idem.current(ctx)
	if err != nil || cur.id == start.id || cur.id < 0 {
		t.Fatalf("after the last epoch: %v, %v; want a new producer id", cur, err)
	}
}

// TestIdempotenceRefusedNamesTheWayOut: InitProducerId refused for want
// of the ACL fails the records with an error naming the ACL and
// enable.idempotence=false, without retrying for ever.
func TestIdempotenceRefusedNamesTheWayOut(t *testing.T) {
	c, addr := newCluster(t, kfake.SeedTopics(1, "orders"))
	c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.InitProducerID}, Err: kerr.ClusterAuthorizationFailed, Count: -1})
	p := newTestProducer(t, fastConfig(addr))
	a := newAcks()
	ids := sendBatch(t, p, a, "orders", "ev", 2)
	a.exactlyOnce(t, ids)
	err := a.err(ids[0])
	if err == nil {
		t.Fatal("the record was acknowledged without a producer id")
	}
	for _, want := range []string{"enable.idempotence=false", "IdempotentWrite", "InitProducerId", `"ev-0"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}

// TestIdempotenceInitRetried: InitProducerId answered
// COORDINATOR_LOAD_IN_PROGRESS or COORDINATOR_NOT_AVAILABLE (a broker
// just started) is retried with backoff, as the batch would be.
func TestIdempotenceInitRetried(t *testing.T) {
	c, addr := newCluster(t, kfake.SeedTopics(1, "orders"))
	c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.InitProducerID}, Err: kerr.CoordinatorLoadInProgress, Count: 2},
		kfake.Fault{Keys: []kmsg.Key{kmsg.InitProducerID}, Err: kerr.CoordinatorNotAvailable, Count: 1})
	sent := watchProduce(t, c)
	p := newTestProducer(t, batchConfig(addr, true))
	a := newAcks()
	ids := sendBatch(t, p, a, "orders", "ev", 3)
	a.exactlyOnce(t, ids)
	for _, id := range ids {
		if err := a.err(id); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	if got := sent(); len(got) != 1 || got[0].batch.ProducerID < 0 {
		t.Fatalf("%d produce requests (want 1) or no producer id", len(got))
	}
}
