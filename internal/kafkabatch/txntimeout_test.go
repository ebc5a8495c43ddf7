package kafkabatch

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"os"
	"slices"
	"testing"
	"time"
)

// TestTxnTimeoutResumed, on the bed's broker: a transaction held open past
// transaction.timeout.ms is aborted by the coordinator (its check runs
// every transaction.abort.timed.out.transaction.cleanup.interval.ms, 10 s
// by default, which the bed keeps); the producer's next request fails as
// fenced. ResumeAfterTimeout (InitProducerId with its own id and epoch,
// KIP-360) is accepted, the producer goes on with the epoch the abort
// bumped to, and its next transaction commits. A producer taken over by
// another is told apart: the same question is refused (PRODUCER_FENCED),
// ResumeAfterTimeout answers false and the producer stays fenced.
func TestTxnTimeoutResumed(t *testing.T) {
	c, topic := bedClient(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	tp := TopicPartition{topic, 0}
	a, err := NewTxnProducer(c, TxnProducerConfig{TransactionalID: topic, TransactionTimeout: time.Second, RetryBackoff: 20 * time.Millisecond},
		slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	must(t, "NewTxnProducer", err)
	must(t, "Init", a.Init(ctx))
	must(t, "Begin", a.Begin())
	produce(t, ctx, a, tp, 0, "timed-out-0")
	waited := time.Now()
	for {
		if time.Since(waited) > 40*time.Second {
			t.Fatal("the coordinator did not abort a transaction open 40 s with transaction.timeout.ms 1000")
		}
		time.Sleep(500 * time.Millisecond)
		if _, err = a.Produce(ctx, tp, values("timed-out-more")); err != nil {
			break
		}
	}
	if !errors.Is(err, ErrFenced) {
		t.Fatalf("produce after the timeout: %v, want ErrFenced", err)
	}
	t.Logf("aborted by the coordinator after %s: %v", time.Since(waited).Round(100*time.Millisecond), err)
	epoch := a.Epoch()
	ok, err := a.ResumeAfterTimeout(ctx)
	if err != nil || !ok {
		t.Fatalf("ResumeAfterTimeout after the coordinator's timeout abort: %v, %v; want true", ok, err)
	}
	if a.Epoch() <= epoch {
		t.Errorf("epoch %d after the resume, want one above %d (what the producer depends on: a later epoch, sequences from 0; Kafka 4.1.1 answers the one its abort bumped to)", a.Epoch(), epoch)
	}
	must(t, "Begin", a.Begin())
	off, err := a.Produce(ctx, tp, values("kept-0"))
	must(t, "produce after the resume", err)
	must(t, "Commit", a.Commit(ctx))

	// A takeover: the second producer fences the open transaction; the
	// first, older than its timeout when it asks (so that it asks), is
	// refused. (The second has no transaction open yet: one would be
	// fenced by the question, see ResumeAfterTimeout.)
	must(t, "Begin", a.Begin())
	produce(t, ctx, a, tp, off+2, "zombie-0") // off+1 is kept-0's commit marker
	b := newTxn(t, c, topic)
	must(t, "Init of the second", b.Init(ctx))
	time.Sleep(1100 * time.Millisecond)
	if _, err := a.Produce(ctx, tp, values("zombie-1")); !errors.Is(err, ErrFenced) {
		t.Fatalf("the taken-over producer's produce: %v, want ErrFenced", err)
	}
	if ok, err := a.ResumeAfterTimeout(ctx); ok || err != nil {
		t.Fatalf("ResumeAfterTimeout after a takeover: %v, %v; want false", ok, err)
	}
	must(t, "Begin", b.Begin())
	_, err = b.Produce(ctx, tp, values("b-0"))
	must(t, "produce of the second", err)
	must(t, "Commit", b.Commit(ctx))
	if got, want := fetchCommitted(t, c, tp), []string{"kept-0", "b-0"}; !slices.Equal(got, want) {
		t.Errorf("read_committed: %q, want %q", got, want)
	}
}

// Regression (issue 17b, seen in the zombie test): the zombie, thawed a
// few seconds after the takeover, asked the coordinator with its old epoch
// whether its transaction had timed out; the coordinator fenced the new
// instance's ongoing transaction before looking at the epoch, and both
// stopped. A transaction younger than transaction.timeout.ms cannot have
// timed out: the question is not asked (the client is never called here).
func TestResumeAfterTimeoutNotAskedWhenYoung(t *testing.T) {
	tp := TopicPartition{"t", 0}
	p := &TxnProducer{cfg: TxnProducerConfig{TransactionalID: "c", TransactionTimeout: time.Minute}, state: stateFenced,
		producerID: 1, epoch: 3, added: map[TopicPartition]bool{tp: true}, startedAt: time.Now().Add(-10 * time.Second)}
	if ok, err := p.ResumeAfterTimeout(context.Background()); ok || err != nil {
		t.Fatalf("ResumeAfterTimeout for a transaction open 10s with transaction.timeout.ms 1m: %v, %v; want false without asking", ok, err)
	}
	p.added, p.startedAt = map[TopicPartition]bool{}, time.Now().Add(-2*time.Minute)
	if ok, err := p.ResumeAfterTimeout(context.Background()); ok || err != nil {
		t.Fatalf("ResumeAfterTimeout with no partition at the coordinator: %v, %v; want false without asking", ok, err)
	}
}

// Regression (review 17b, finding 7): with the epoch at its maximum the
// question was not asked and the stop said "took over"; it is now
// ErrEpochExhausted (a new producer id at the next session), still not
// asked (the nil client would panic).
func TestResumeAfterTimeoutEpochExhausted(t *testing.T) {
	tp := TopicPartition{"t", 0}
	p := &TxnProducer{cfg: TxnProducerConfig{TransactionalID: "c", TransactionTimeout: time.Second}, state: stateFenced,
		producerID: 1, epoch: math.MaxInt16 - 1, added: map[TopicPartition]bool{tp: true}, startedAt: time.Now().Add(-time.Minute)}
	if ok, err := p.ResumeAfterTimeout(context.Background()); ok || !errors.Is(err, ErrEpochExhausted) {
		t.Fatalf("ResumeAfterTimeout at epoch %d: %v, %v; want ErrEpochExhausted", p.epoch, ok, err)
	}
}
