package kafkabatch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
)

func TestClassify(t *testing.T) {
	cases := []struct {
		err  error
		want errClass
	}{
		{kafka.ProducerFenced, classFenced},
		{kafka.InvalidProducerEpoch, classFenced},
		{fmt.Errorf("wrapped: %w", kafka.TransactionCoordinatorFenced), classFenced},
		{kafka.ConcurrentTransactions, classRetry},
		{kafka.GroupLoadInProgress, classRetry},
		{kafka.NotCoordinatorForGroup, classRetry},
		{kafka.GroupCoordinatorNotAvailable, classRetry},
		{kafka.NotLeaderForPartition, classRetry},
		{kafka.NotEnoughReplicas, classRetry},
		{protocol.NewErrNoTopic("t"), classRetry},
		{io.ErrUnexpectedEOF, classRetry}, // a connection closed mid-answer
		{kafka.OutOfOrderSequenceNumber, classAbortable},
		{kafka.UnknownProducerId, classAbortable},
		{kafka.InvalidTransactionState, classAbortable},
		{kafka.MessageSizeTooLarge, classAbortable},
		{kafka.TransactionalIDAuthorizationFailed, classAbortable},
		{context.DeadlineExceeded, classAbortable},
	}
	for _, c := range cases {
		if got := classify(c.err); got != c.want {
			t.Errorf("classify(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}

func TestTxnProducerConfigValidate(t *testing.T) {
	c := TxnProducerConfig{TransactionalID: "x"}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.TransactionTimeout != time.Minute || c.RetryBackoff != 100*time.Millisecond || c.RetryBackoffMax != time.Second {
		t.Errorf("defaults: %+v", c)
	}
	for _, bad := range []TxnProducerConfig{{}, {TransactionalID: "x", TransactionTimeout: time.Microsecond}, {TransactionalID: "x", Compression: 9}} {
		if err := bad.Validate(); err == nil {
			t.Errorf("Validate(%+v): no error", bad)
		}
	}
}

// The order of calls is checked before anything is sent: the client here
// points nowhere.
func TestTxnStateOrder(t *testing.T) {
	p, err := NewTxnProducer(&kafka.Client{Addr: kafka.TCP("127.0.0.1:1")}, TxnProducerConfig{TransactionalID: "x"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tp := TopicPartition{"t", 0}
	if err := p.Begin(); err == nil || !strings.Contains(err.Error(), "before Init") {
		t.Errorf("Begin before Init: %v", err)
	}
	p.state = stateReady // as after Init
	if _, err := p.Produce(ctx, tp, values("v")); err == nil || !strings.Contains(err.Error(), "call Begin") {
		t.Errorf("Produce outside a transaction: %v", err)
	}
	if err := p.Commit(ctx); err == nil {
		t.Error("Commit outside a transaction: no error")
	}
	if err := p.Begin(); err != nil {
		t.Fatal(err)
	}
	if err := p.Begin(); err == nil {
		t.Error("Begin twice: no error")
	}
	if err := p.Init(ctx); err == nil {
		t.Error("Init with a transaction open: no error")
	}
	// Nothing was added to the transaction: commit and abort send nothing.
	if err := p.Commit(ctx); err != nil {
		t.Errorf("Commit of an empty transaction: %v", err)
	}
	p.state = stateAbortable
	if _, err := p.Produce(ctx, tp, values("v")); !errors.Is(err, ErrAbortable) {
		t.Errorf("Produce after an abortable error: %v", err)
	}
	if err := p.Commit(ctx); !errors.Is(err, ErrAbortable) {
		t.Errorf("Commit after an abortable error: %v", err)
	}
	if err := p.Abort(ctx); err != nil {
		t.Errorf("Abort of an empty transaction: %v", err)
	}
	// Fenced: only Init (a new producer, at a new session) is allowed; it
	// would reach the unreachable client, so it is not called here.
	p.state = stateFenced
	for name, err := range map[string]error{"Begin": p.Begin(), "Abort": p.Abort(ctx), "Commit": p.Commit(ctx)} {
		if !errors.Is(err, ErrFenced) {
			t.Errorf("%s when fenced: %v", name, err)
		}
	}
}

// Regression (issue 17, p99 at 1,000 events/s): CONCURRENT_TRANSACTIONS
// (the coordinator still writing the last transaction's markers) was
// retried after 2 ms, then doubling up to retry.backoff.max.ms, so a
// marker write slowed by a loaded broker cost up to a second more; the
// wait stays at Java's 20 ms now.
func TestConcurrentTxnWait(t *testing.T) {
	want := []time.Duration{1, 2, 4, 8, 16, 20, 20, 20}
	for i, w := range want {
		if got := concurrentTxnWait(i + 1); got != w*time.Millisecond {
			t.Errorf("wait after attempt %d: %s, want %s", i+1, got, w*time.Millisecond)
		}
	}
}
