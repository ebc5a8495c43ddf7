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
	"github.com/outboxrelay/outboxrelay/router"
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
	return sendBatchTo(t, p, a, topic, 0, prefix, n)
}

// sendBatchTo is sendBatch to the given partition.
func sendBatchTo(t *testing.T, p *Producer, a *acks, topic string, partition int, prefix string, n int) []string {
	t.Helper()
	var ids []string
	for i := range n {
		id := fmt.Sprintf("%s-%d", prefix, i)
		if err := p.Send(context.Background(), router.Record{Topic: topic, Partition: partition, Key: []byte("k"), Value: []byte(id), EventID: id}, a.cb(id)); err != nil {
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
//
// Regression (review of issue 17a, finding 7): the test did not check
// that the lost answer was a success, so "kept once" also held when the
// first attempt wrote nothing and no deduplication happened.
func TestIdempotentLostAnswerNotDuplicated(t *testing.T) {
	for _, idempotent := range []bool{true, false} {
		t.Run(fmt.Sprint("idempotent=", idempotent), func(t *testing.T) {
			c, addr := newCluster(t, kfake.SeedTopics(1, "orders"))
			sent := watchProduce(t, c)
			checkLostAnswer(t, batchConfig(addr, idempotent), "orders", idempotent)
			if got := sent(); len(got) != 2 || !bytes.Equal(got[0].raw, got[1].raw) {
				t.Errorf("%d produce requests; want 2 with the same bytes", len(got))
			}
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
	a.allOK(t, ids)
	if l.lost.Load() != 1 {
		t.Fatalf("%d produce answers lost, want 1", l.lost.Load())
	}
	// The lost answer said the batch was written: the retry's batch is
	// then a duplicate, which only idempotence keeps out.
	if codes := l.lostCodes(); len(codes) != 1 || codes[0] != 0 {
		t.Fatalf("the lost produce answer's error codes %v, want [0] (written)", codes)
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
			id, e := got[0].batch.ProducerID, got[0].batch.ProducerEpoch
			checkStamps(t, got, []stamp{{id, e, 0}, {id, e, 3}, {id, e + 1, 0}, {id, e + 1, 2}})
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
//
// Regression (review of issue 17a, finding 2): the refusal came back as a
// refused batch, so every record was sent again on its own, each asking
// for a producer id again: about 2,600 refused round trips for a 256 KiB
// batch of 100-byte records. Now the batch fails whole, InitProducerId is
// asked once, and later batches fail with the kept refusal.
func TestIdempotenceRefusedNamesTheWayOut(t *testing.T) {
	c, addr := newCluster(t, kfake.SeedTopics(1, "orders"))
	inits := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.InitProducerID}, Err: kerr.ClusterAuthorizationFailed, Count: -1})
	sent := watchProduce(t, c)
	p := newTestProducer(t, batchConfig(addr, true))
	a := newAcks()
	ids := sendBatch(t, p, a, "orders", "ev", 50)
	ids = append(ids, sendBatch(t, p, a, "orders", "later", 3)...)
	a.exactlyOnce(t, ids)
	for _, id := range ids {
		err := a.err(id)
		if err == nil {
			t.Fatalf("%s was acknowledged without a producer id", id)
		}
		for _, want := range []string{"enable.idempotence=false", "IdempotentWrite", "InitProducerId", fmt.Sprintf("%q", id)} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not name %s", err, want)
			}
		}
	}
	if n := inits.Hits(); n != 1 {
		t.Errorf("%d InitProducerId requests, want 1", n)
	}
	if got := sent(); len(got) != 0 {
		t.Errorf("%d produce requests without a producer id, want 0", len(got))
	}
}

// TestIdempotentProduceRefusedFailsWholeBatch: a produce answered
// CLUSTER_AUTHORIZATION_FAILED (a broker before 2.8 without
// IDEMPOTENT_WRITE) fails the batch whole and, as in Java's producer, the
// idempotent producer for good: the next batch is not sent.
func TestIdempotentProduceRefusedFailsWholeBatch(t *testing.T) {
	c, addr := newCluster(t, kfake.SeedTopics(1, "orders"))
	c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Err: kerr.ClusterAuthorizationFailed, Count: -1})
	sent := watchProduce(t, c)
	p := newTestProducer(t, batchConfig(addr, true))
	a := newAcks()
	ids := sendBatch(t, p, a, "orders", "ev", 20)
	ids = append(ids, sendBatch(t, p, a, "orders", "later", 2)...)
	a.exactlyOnce(t, ids)
	for _, id := range ids {
		if err := a.err(id); err == nil || !strings.Contains(err.Error(), "IdempotentWrite") {
			t.Errorf("%s: %v; want the refusal naming the ACL", id, err)
		}
	}
	if got := sent(); len(got) != 1 {
		t.Errorf("%d produce requests, want 1 (no record-by-record resend, no later batch)", len(got))
	}
}

// TestIdempotenceNoFindCoordinator: the idempotent producer asks for its id
// without a coordinator lookup (as Java's producer, to any broker).
//
// Regression (review of issue 17a, finding 1): kafka-go's Client sent
// FindCoordinator(TRANSACTION, key "") before each InitProducerId, which
// makes a broker create __transaction_state and, with an authorizer, log a
// denied DESCRIBE, from an at-least-once relay and from `check`.
func TestIdempotenceNoFindCoordinator(t *testing.T) {
	c, addr := newCluster(t, kfake.SeedTopics(1, "orders"))
	finds := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.FindCoordinator}, Observe: true, Count: -1})
	inits := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.InitProducerID}, Observe: true, Count: -1})
	p := newTestProducer(t, batchConfig(addr, true))
	a := newAcks()
	ids := sendBatch(t, p, a, "orders", "ev", 3)
	a.exactlyOnce(t, ids)
	a.allOK(t, ids)
	check := newTestProducer(t, batchConfig(addr, true))
	if id, ok, err := check.IdempotentProducerID(context.Background()); err != nil || !ok || id < 0 {
		t.Fatalf("IdempotentProducerID: %d %v %v", id, ok, err)
	}
	if n := inits.Hits(); n != 2 {
		t.Errorf("%d InitProducerId requests, want 2 (the producer's and check's)", n)
	}
	if n := finds.Hits(); n != 0 {
		t.Errorf("%d FindCoordinator requests, want none", n)
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
	a.allOK(t, ids)
	if got := sent(); len(got) != 1 || got[0].batch.ProducerID < 0 {
		t.Fatalf("%d produce requests (want 1) or no producer id", len(got))
	}
}

// stamp is a batch's producer id, epoch and base sequence.
type stamp struct {
	id    int64
	epoch int16
	seq   int32
}

func stampOf(b sentBatch) stamp {
	return stamp{b.batch.ProducerID, b.batch.ProducerEpoch, b.batch.BaseSequence}
}

// TestIdempotentFailedBatchBumpsEpoch: a batch written by one attempt
// (REQUEST_TIMED_OUT after the append) and failed for good by the next
// (TOPIC_AUTHORIZATION_FAILED) bumps the epoch: the next batch, of the
// same size, would otherwise carry the same epoch and sequences and be
// dropped by the broker as a duplicate, a silent loss.
func TestIdempotentFailedBatchBumpsEpoch(t *testing.T) {
	c, addr := newCluster(t, kfake.SeedTopics(1, "orders"))
	sent := watchProduce(t, c)
	c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Err: kerr.RequestTimedOut, Count: 1},
		kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Err: kerr.TopicAuthorizationFailed, Count: 1})
	p := newTestProducer(t, batchConfig(addr, true))
	a := newAcks()
	x := sendBatch(t, p, a, "orders", "x", 1)
	y := sendBatch(t, p, a, "orders", "y", 1)
	a.exactlyOnce(t, append(x, y...))
	if a.err(x[0]) == nil {
		t.Fatal("x was acknowledged; want it failed by TOPIC_AUTHORIZATION_FAILED")
	}
	if err := a.err(y[0]); err != nil {
		t.Fatalf("y: %v", err)
	}
	got := sent()
	if len(got) != 3 {
		t.Fatalf("%d produce requests, want 3", len(got))
	}
	e := got[0].batch.ProducerEpoch
	want := []stamp{{got[0].batch.ProducerID, e, 0}, {got[0].batch.ProducerID, e, 0}, {got[0].batch.ProducerID, e + 1, 0}}
	checkStamps(t, got, want)
	if v := values(t, addr, "orders"); strings.Join(v, " ") != "x-0 y-0" {
		t.Errorf("partition holds %v, want [x-0 y-0]", v)
	}
}

// TestIdempotentBumpMovesOtherPartitions: after one partition's sequence
// was lost and the epoch bumped, another partition's next batch is stamped
// with the new epoch from sequence 0, and the broker takes it.
func TestIdempotentBumpMovesOtherPartitions(t *testing.T) {
	c, addr := newCluster(t, kfake.SeedTopics(2, "orders"))
	sent := watchProduce(t, c)
	p := newTestProducer(t, batchConfig(addr, true))
	a := newAcks()
	ids := sendBatchTo(t, p, a, "orders", 0, "a", 2)
	ids = append(ids, sendBatchTo(t, p, a, "orders", 1, "b", 2)...)
	c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Partitions: []int32{1}, Err: kerr.OutOfOrderSequenceNumber, Count: 1})
	ids = append(ids, sendBatchTo(t, p, a, "orders", 1, "c", 2)...)
	ids = append(ids, sendBatchTo(t, p, a, "orders", 0, "d", 3)...)
	a.exactlyOnce(t, ids)
	a.allOK(t, ids)
	got := sent()
	if len(got) != 5 {
		t.Fatalf("%d produce requests, want 5", len(got))
	}
	id, e := got[0].batch.ProducerID, got[0].batch.ProducerEpoch
	// p0 a, p1 b, p1 c (refused), p1 c again, p0 d.
	want := []stamp{{id, e, 0}, {id, e, 0}, {id, e, 2}, {id, e + 1, 0}, {id, e + 1, 0}}
	checkStamps(t, got, want)
	parts := readTopic(t, []string{addr}, "orders")
	if n0, n1 := len(parts[0]), len(parts[1]); n0 != 5 || n1 != 4 {
		t.Errorf("partitions hold %d and %d records, want 5 and 4", n0, n1)
	}
}

// TestIdempotentInvalidEpochFailsBatch: INVALID_PRODUCER_EPOCH is not
// retried, as with Java's idempotent producer: the batch fails whole (not
// record by record) and the next batch goes out with a new epoch.
func TestIdempotentInvalidEpochFailsBatch(t *testing.T) {
	c, addr := newCluster(t, kfake.SeedTopics(1, "orders"))
	sent := watchProduce(t, c)
	c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Err: kerr.InvalidProducerEpoch, Count: 1})
	p := newTestProducer(t, batchConfig(addr, true))
	a := newAcks()
	x := sendBatch(t, p, a, "orders", "x", 3)
	y := sendBatch(t, p, a, "orders", "y", 2)
	a.exactlyOnce(t, append(x, y...))
	for _, id := range x {
		if err := a.err(id); err == nil || !strings.Contains(err.Error(), "newer epoch") {
			t.Errorf("%s: %v; want INVALID_PRODUCER_EPOCH", id, err)
		}
	}
	a.allOK(t, y)
	got := sent()
	if len(got) != 2 {
		t.Fatalf("%d produce requests, want 2 (no retry, no record-by-record resend)", len(got))
	}
	if g0, g1 := stampOf(got[0]), stampOf(got[1]); g1 != (stamp{g0.id, g0.epoch + 1, 0}) {
		t.Errorf("the next batch %v, want %v one epoch on, sequence 0", g1, g0)
	}
}

// TestIdempotentBumpsPerBatchCapped: a broker that keeps answering
// OUT_OF_ORDER_SEQUENCE_NUMBER, even to sequence 0 of a new epoch, fails
// the batch after maxBumpsPerBatch bumps instead of burning an epoch at
// every backoff step.
func TestIdempotentBumpsPerBatchCapped(t *testing.T) {
	c, addr := newCluster(t, kfake.SeedTopics(1, "orders"))
	sent := watchProduce(t, c)
	c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Err: kerr.OutOfOrderSequenceNumber, Count: -1})
	p := newTestProducer(t, batchConfig(addr, true))
	a := newAcks()
	ids := sendBatch(t, p, a, "orders", "ev", 4)
	a.exactlyOnce(t, ids)
	for _, id := range ids {
		if err := a.err(id); err == nil || !strings.Contains(err.Error(), "epoch bumps") {
			t.Errorf("%s: %v; want the batch failed after its bumps", id, err)
		}
	}
	if got := sent(); len(got) != 1+maxBumpsPerBatch {
		t.Errorf("%d produce requests, want %d (the batch and one per bump, not record by record)", len(got), 1+maxBumpsPerBatch)
	}
}

// allOK fails the test unless each of ids was acknowledged without error.
func (a *acks) allOK(t *testing.T, ids []string) {
	t.Helper()
	for _, id := range ids {
		if err := a.err(id); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
}

// checkStamps compares the produce requests' stamps with want, in order.
func checkStamps(t *testing.T, got []sentBatch, want []stamp) {
	t.Helper()
	for i, w := range want {
		if g := stampOf(got[i]); g != w {
			t.Errorf("request %d: %v, want %v", i, g, w)
		}
	}
}

// TestReusedBufferRetryResendsItsOwnBytes: the partition worker encodes
// each batch into the buffer of the one before (sink/partition.go, buf). A
// smaller batch after a larger one, whose first attempt is answered with
// an error, is resent byte for byte, holds only its own records (none of
// the larger batch's bytes left over), and the partition holds every
// record once, in order.
func TestReusedBufferRetryResendsItsOwnBytes(t *testing.T) {
	c, addr := newCluster(t, kfake.SeedTopics(1, "orders"))
	sent := watchProduce(t, c)
	p := newTestProducer(t, batchConfig(addr, true))
	a := newAcks()
	ids := sendBatch(t, p, a, "orders", "large-event", 20)
	c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Err: kerr.RequestTimedOut, Count: 1})
	ids = append(ids, sendBatch(t, p, a, "orders", "s", 3)...)
	a.exactlyOnce(t, ids)
	a.allOK(t, ids)
	got := sent()
	if len(got) != 3 || !bytes.Equal(got[1].raw, got[2].raw) || len(got[1].raw) >= len(got[0].raw) {
		t.Fatalf("%d produce requests; want the large batch, then the small one twice with the same bytes", len(got))
	}
	if n := len(got[1].batch.Records); n != 3 || string(got[1].batch.Records[2].Value) != "s-2" || got[1].batch.BaseSequence != 20 {
		t.Errorf("the retried batch: %d records, base sequence %d; want s-0..s-2 at 20", n, got[1].batch.BaseSequence)
	}
	checkWritten(t, addr, "orders", ids, true)
}
