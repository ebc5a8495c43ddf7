package exactlyonce

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/outboxrelay/outboxrelay/internal/kafkabatch"
	"github.com/outboxrelay/outboxrelay/router"
	"github.com/outboxrelay/outboxrelay/sink"
)

// fakeTxn is a txnProducer without a broker: it keeps the values of the
// open transaction and of the committed ones, and fails a call when told.
type fakeTxn struct {
	mu        sync.Mutex
	open      []string
	committed []string
	inits     int
	parts     map[int]int // records per partition of topic t
	failNext  error       // the next Produce, ProduceAll or Commit returns it
	block     chan struct{}
	timedOut  bool // ResumeAfterTimeout's answer: the coordinator aborted for the timeout
	resumes   int  // ResumeAfterTimeout calls
	commits   int
	abortErr  error // the next Abort returns it
}

func (f *fakeTxn) ResumeAfterTimeout(context.Context) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resumes++
	if f.timedOut {
		f.open = nil // the coordinator aborted it
	}
	return f.timedOut, nil
}

func (f *fakeTxn) Init(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inits++
	f.open = nil
	return nil
}

func (f *fakeTxn) Begin() error { return nil }

func (f *fakeTxn) FirstAdd() kafkabatch.FirstAdd { return kafkabatch.FirstAdd{} }

func (f *fakeTxn) Close() error { return nil }

func (f *fakeTxn) takeFail() error {
	err := f.failNext
	f.failNext = nil
	return err
}

func (f *fakeTxn) Produce(ctx context.Context, tp kafkabatch.TopicPartition, msgs []kafkabatch.Message) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.takeFail(); err != nil {
		return 0, err
	}
	for _, m := range msgs {
		if tp.Topic != "offsets" {
			f.open = append(f.open, string(m.Value))
			if f.parts == nil {
				f.parts = map[int]int{}
			}
			f.parts[tp.Partition]++
		}
	}
	return 0, nil
}

func (f *fakeTxn) ProduceAll(ctx context.Context, batches []kafkabatch.PartitionBatch) error {
	f.mu.Lock()
	err := f.takeFail()
	f.mu.Unlock()
	if err != nil {
		return err
	}
	for _, b := range batches {
		if _, err := f.Produce(ctx, b.TP, b.Msgs); err != nil {
			return err
		}
	}
	return nil
}

func (f *fakeTxn) Commit(ctx context.Context) error {
	f.mu.Lock()
	block := f.block
	f.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.takeFail(); err != nil {
		return err
	}
	f.committed = append(f.committed, f.open...)
	f.open = nil
	f.commits++
	return nil
}

func (f *fakeTxn) Abort(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.open = nil
	err := f.abortErr
	f.abortErr = nil
	return err
}

func (f *fakeTxn) values() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.committed...)
}

// newFakeTxnSink is a Sink on f, with a stored position of pos.
func newFakeTxnSink(t *testing.T, f *fakeTxn, cfg Config) *Sink {
	return newFakeTxnSinkWorker(t, f, cfg, true)
}

func newFakeTxnSinkWorker(t *testing.T, f *fakeTxn, cfg Config, worker bool) *Sink {
	t.Helper()
	if cfg.Boundary == "" {
		cfg.Boundary = BoundaryPoll
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 30 * time.Second
	}
	cfg.CarryRecords, cfg.CarryBytes = cmp.Or(cfg.CarryRecords, 5000), cmp.Or(cfg.CarryBytes, carryLimit)
	pcfg := sink.Config{Brokers: []string{"127.0.0.1:1"}, Linger: time.Millisecond, BatchBytes: sink.DefaultBatchBytes, MaxRequestSize: sink.DefaultMaxRequestSize, MetadataMaxAge: time.Hour}
	p, err := sink.NewProducer(pcfg, nil) // never connects: the partition counts are known
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	s := newSink(pcfg, cfg, testLogger(t), f, p.Offsets("offsets", "c", "s", -1))
	s.p = p
	s.load = func(context.Context) (sink.Offset, bool, error) { return sink.Offset{}, false, nil }
	s.w.parts = map[string]topicParts{"offsets": {n: 1, at: time.Now()}, "t": {n: 1, at: time.Now()}}
	if worker {
		go s.work()
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// sendValue sends a record with value v to topic t, partition 0, and
// returns a channel with its ack.
func sendValue(t *testing.T, s *Sink, v string) chan error {
	t.Helper()
	ch := make(chan error, 1)
	if err := s.Send(context.Background(), router.Record{Topic: "t", Partition: 0, Value: []byte(v), Timestamp: time.Now()}, func(err error) { ch <- err }); err != nil {
		t.Fatal(err)
	}
	return ch
}

func waitAck(t *testing.T, ch chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("no ack in 5 s")
		return nil
	}
}

// Regression (review of issue 17, finding 1): the worker took a session's
// records, then Start began the next session before the worker locked
// workMu, and the worker committed the old session's records in the new
// one (a duplicate: the new session sends them again) and pending went
// negative (Committed said "all" while records were uncommitted).
func TestTxnSinkStaleRoundAfterStart(t *testing.T) {
	f := &fakeTxn{}
	s := newFakeTxnSinkWorker(t, f, Config{}, false) // this test plays the worker's first step
	if _, _, err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	old := sendValue(t, s, "old")
	items, flushWant, gen, _ := s.take(0)                       // the worker took the old session's record...
	if _, _, err := s.Start(context.Background()); err != nil { // ...and the next session starts
		t.Fatal(err)
	}
	s.workMu.Lock()
	s.step(items, flushWant, gen)
	s.workMu.Unlock()
	go s.work()
	if err := waitAck(t, old); !errors.Is(err, ErrAborted) {
		t.Fatalf("the old session's record: ack %v, want ErrAborted", err)
	}
	newer := sendValue(t, s, "new")
	s.Boundary(100)
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := waitAck(t, newer); err != nil {
		t.Fatal(err)
	}
	if got := f.values(); len(got) != 1 || got[0] != "new" {
		t.Fatalf("committed %q, want only the new session's record", got)
	}
	s.mu.Lock()
	pending := s.pending
	s.mu.Unlock()
	if pending != 0 {
		t.Fatalf("pending = %d after everything committed, want 0", pending)
	}
}

// Regression (review of issue 17, finding 3): Start called InitProducerId
// only once per process, so an instance that was standby while another
// took over (bumping the epoch) resumed with its old epoch and stopped as
// fenced at its first write.
func TestTxnSinkInitEveryStart(t *testing.T) {
	f := &fakeTxn{}
	s := newFakeTxnSink(t, f, Config{})
	for range 2 {
		if _, _, err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	f.mu.Lock()
	inits := f.inits
	f.mu.Unlock()
	if inits != 2 {
		t.Fatalf("InitProducerId called %d times in two sessions, want 2", inits)
	}
}

// Regression (review of issue 17, finding 4): the records after the last
// boundary were held back unacknowledged until 1 MiB, whatever the
// caller's in-flight budget; a PostgreSQL transaction larger than the
// budget filled it, the caller stopped sending and the worker waited for
// the rest of the transaction forever. Here the caller's budget is 10
// records (as relay.Budget blocks Send), the transaction has 50.
func TestTxnSinkTransactionLargerThanBudget(t *testing.T) {
	f := &fakeTxn{}
	s := newFakeTxnSink(t, f, Config{CarryRecords: 5, CarryBytes: 1 << 20})
	if _, _, err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	budget := make(chan struct{}, 10)
	for i := range 50 {
		select {
		case budget <- struct{}{}:
		case <-time.After(5 * time.Second):
			t.Fatalf("record %d of the transaction: the budget stayed full for 5 s", i)
		}
		if err := s.Send(context.Background(), router.Record{Topic: "t", Partition: 0, Value: []byte(fmt.Sprint(i)), Timestamp: time.Now()}, func(error) { <-budget }); err != nil {
			t.Fatal(err)
		}
	}
	s.Boundary(100)
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := len(f.values()); got != 50 {
		t.Fatalf("committed %d records, want the transaction's 50", got)
	}
}

// Regression (review of issue 17, finding 8): Close locked workMu before
// cancelling the worker, whose round retries until Kafka answers: with
// Kafka down, Close (and so SIGTERM) hung for ever; Start likewise
// ignored its ctx while it waited.
func TestTxnSinkCloseAndStartWithKafkaDown(t *testing.T) {
	f := &fakeTxn{block: make(chan struct{})} // Commit waits: Kafka does not answer
	s := newFakeTxnSink(t, f, Config{})
	if _, _, err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	sendValue(t, s, "a")
	s.Boundary(100)
	time.Sleep(50 * time.Millisecond) // the round is in Commit
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, _, err := s.Start(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Start while the round waits for Kafka: %v, want its ctx's deadline", err)
	}
	closed := make(chan struct{})
	go func() {
		s.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close hung while Kafka did not answer")
	}
}

// Regression (review of issue 17, finding 5): the worker waited the whole
// transaction.boundary.interval.ms with a transaction open, past half of
// transaction.timeout.ms (the coordinator aborts at the timeout).
func TestTxnSinkIntervalWaitCappedAtHalfTimeout(t *testing.T) {
	s := newFakeTxnSinkWorker(t, &fakeTxn{}, Config{Boundary: BoundaryInterval, Interval: time.Minute, Timeout: 10 * time.Second}, false)
	s.w.open, s.w.bSeq, s.w.openedAt = true, 1, time.Now()
	got := s.w.wait()
	s.w.open = false
	go s.work() // for Close
	if got > 5*time.Second || got < 4*time.Second {
		t.Fatalf("wait %s with an interval of 1m and a timeout of 10s, want at most 5s", got)
	}
}

// Regression (review of issue 17, finding 9): permanent broker answers
// (a record too large for the topic, a missing ACL) were aborted and
// retried as ErrAborted for ever; they are ErrRejected, naming the fix.
func TestTxnSinkPermanentErrorsRejected(t *testing.T) {
	for _, tc := range []struct {
		err  error
		name string
	}{
		{kafka.MessageSizeTooLarge, "max.message.bytes"},
		{kafka.TopicAuthorizationFailed, "kafka-acls"},
		{kafka.TransactionalIDAuthorizationFailed, "--transactional-id"},
		{kafka.OutOfOrderSequenceNumber, ""}, // abortable: resumed
	} {
		f := &fakeTxn{}
		s := newFakeTxnSink(t, f, Config{TransactionalID: "c"})
		if _, _, err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		f.mu.Lock()
		f.failNext = fmt.Errorf("kafkabatch: produce: %w: %w", kafkabatch.ErrAbortable, tc.err)
		f.mu.Unlock()
		ack := sendValue(t, s, "a")
		s.Boundary(100)
		err := waitAck(t, ack)
		switch {
		case tc.name == "" && !errors.Is(err, ErrAborted):
			t.Errorf("%v: ack %v, want ErrAborted", tc.err, err)
		case tc.name != "" && (!errors.Is(err, ErrRejected) || errors.Is(err, ErrAborted) || !strings.Contains(err.Error(), tc.name)):
			t.Errorf("%v: ack %v, want ErrRejected naming %s", tc.err, err, tc.name)
		}
	}
}

// Regression (review of issue 17, finding 11): a null-key record's
// partition was time.Now() modulo the partition count, per record, which
// scattered one Kafka transaction over every partition (an
// AddPartitionsToTxn entry and a batch each); it is sticky per
// transaction now, as Java's and the at-least-once producer's.
func TestTxnSinkNullKeySticky(t *testing.T) {
	f := &fakeTxn{}
	s := newFakeTxnSink(t, f, Config{})
	s.workMu.Lock()
	s.w.parts["t"] = topicParts{n: 8, at: time.Now()}
	s.workMu.Unlock()
	if _, _, err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.workMu.Lock() // the whole transaction reaches the worker in one round
	for i := range 50 {
		if err := s.Send(context.Background(), router.Record{Topic: "t", Partition: -1, Value: []byte(fmt.Sprint(i)), Timestamp: time.Now()}, func(error) {}); err != nil {
			t.Fatal(err)
		}
	}
	s.Boundary(100)
	s.workMu.Unlock()
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.parts) != 1 {
		t.Fatalf("one transaction's null-key records went to partitions %v, want one", f.parts)
	}
}
