package exactlyonce

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/outboxrelay/outboxrelay/capture"
	"github.com/outboxrelay/outboxrelay/internal/kafkabatch"
	"github.com/outboxrelay/outboxrelay/router"
)

// errFencedByBroker is what TxnProducer returns for PRODUCER_FENCED or
// INVALID_PRODUCER_EPOCH.
var errFencedByBroker = fmt.Errorf("kafkabatch: EndTxn (commit): %w", kafkabatch.ErrFenced)

// failNextWith makes the fake's next Produce, AddPartitions or Commit fail.
func failNextWith(f *fakeTxn, err error, timedOut bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failNext, f.timedOut = err, timedOut
}

// sendTxn sends one PostgreSQL transaction of one record and its
// boundary, and waits for the record's ack.
func sendTxn(t *testing.T, s *Sink, v string, end capture.LSN) error {
	t.Helper()
	ack := sendValue(t, s, v)
	s.Boundary(end)
	return waitAck(t, ack)
}

// Regression (issue 17: KIP-588 not done): every PRODUCER_FENCED or
// INVALID_PRODUCER_EPOCH stopped the relay as fenced, also when the
// coordinator had only aborted a transaction that outlived
// transaction.timeout.ms. Now the coordinator is asked; it accepted: the
// session ends as an abort (resumed from the committed position, so the
// record is sent once), the open limit halves, and after a whole timeout
// of commits it is back.
func TestTxnSinkTimeoutResumedSmaller(t *testing.T) {
	f := &fakeTxn{}
	s := newFakeTxnSink(t, f, Config{Timeout: 8 * time.Second})
	if _, _, err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	failNextWith(f, errFencedByBroker, true)
	err := sendTxn(t, s, "a", 100)
	if !errors.Is(err, ErrAborted) || errors.Is(err, ErrFenced) || !strings.Contains(err.Error(), "transaction.timeout.ms") {
		t.Fatalf("ack after the coordinator's timeout abort: %v, want ErrAborted naming transaction.timeout.ms", err)
	}
	s.workMu.Lock()
	limit := s.w.openLimit()
	s.workMu.Unlock()
	if limit != 2*time.Second {
		t.Fatalf("open limit %s after a timeout abort with transaction.timeout.ms 8s, want 2s (half of its 4s)", limit)
	}
	if _, _, err := s.Start(context.Background()); err != nil {
		t.Fatalf("the next session: %v", err)
	}
	if err := sendTxn(t, s, "a", 100); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := f.values(); len(got) != 1 || got[0] != "a" {
		t.Fatalf("committed %q, want the record once", got)
	}
	s.workMu.Lock()
	s.w.limitAt = time.Now().Add(-8 * time.Second) // a whole timeout without an abort
	s.workMu.Unlock()
	if err := sendTxn(t, s, "b", 200); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.workMu.Lock()
	limit = s.w.openLimit()
	s.workMu.Unlock()
	if limit != 4*time.Second {
		t.Fatalf("open limit %s after a timeout of commits, want 4s again", limit)
	}
}

// Regression (issue 17, item 3): the fenced error said "took over" in
// every layer; and a takeover must still stop the relay: the coordinator
// refused the producer's id and epoch.
func TestTxnSinkFencedNotTimeout(t *testing.T) {
	f := &fakeTxn{}
	s := newFakeTxnSink(t, f, Config{TransactionalID: "c"})
	if _, _, err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	failNextWith(f, fmt.Errorf("kafkabatch: producing (transactional.id \"c\"): %w", kafkabatch.ErrFenced), false)
	err := sendTxn(t, s, "a", 100)
	if !errors.Is(err, ErrFenced) || errors.Is(err, ErrAborted) {
		t.Fatalf("ack after a takeover: %v, want ErrFenced", err)
	}
	if n := strings.Count(err.Error(), "took over"); n != 1 {
		t.Errorf("the fenced error says \"took over\" %d times, want once: %v", n, err)
	}
	if _, _, err := s.Start(context.Background()); !errors.Is(err, ErrFenced) {
		t.Fatalf("Start after the takeover: %v, want ErrFenced", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.resumes != 1 {
		t.Errorf("the coordinator was asked %d times, want once", f.resumes)
	}
}

// Regression (review 17b, risk 1): three timeouts of Kafka transactions
// that each held one small PostgreSQL transaction (a slow broker or a
// starved machine, not a big transaction) stopped the relay as
// ErrRejected. The stop now needs the PostgreSQL transaction itself to
// have streamed longer than the shortest open limit: these are aborted
// and retried, however often.
func TestTxnSinkTimeoutSmallTransactionRetried(t *testing.T) {
	f := &fakeTxn{}
	s := newFakeTxnSink(t, f, Config{Timeout: 8 * time.Second})
	for attempt := 1; attempt <= 5; attempt++ {
		if _, _, err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		failNextWith(f, errFencedByBroker, true)
		if err := sendTxn(t, s, "small", 0x1_0000_0100); !errors.Is(err, ErrAborted) || errors.Is(err, ErrRejected) {
			t.Fatalf("attempt %d: %v, want ErrAborted (retried)", attempt, err)
		}
	}
	s.workMu.Lock()
	defer s.workMu.Unlock()
	if s.w.limit != time.Second {
		t.Errorf("open limit %s after the timeouts, want the shortest, 1s", s.w.limit)
	}
}

// A Kafka transaction open past the open limit commits at its next
// boundary within a round, instead of carrying everything the round took.
func TestTxnSinkCommitsAtOpenLimit(t *testing.T) {
	f := &fakeTxn{}
	s := newFakeTxnSink(t, f, Config{})
	if _, _, err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.workMu.Lock() // the round takes all three transactions at once
	s.w.limit, s.w.limitAt = time.Nanosecond, time.Now()
	s.pcfg.BatchBytes = 1 // every record is a batch of its own, written when the next comes
	var acks []chan error
	for i := range 3 {
		acks = append(acks, sendValue(t, s, fmt.Sprint(i)))
		s.Boundary(capture.LSN(100 * (i + 1)))
	}
	s.workMu.Unlock()
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, a := range acks {
		if err := waitAck(t, a); err != nil {
			t.Fatal(err)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	// At the first boundary nothing is written yet (a batch goes out when
	// the next record does not fit): no transaction is open at Kafka, so
	// none is past the limit; at the second it is; the third ends the round.
	if f.commits != 2 || len(f.committed) != 3 {
		t.Fatalf("%d commits of %d records, want 2 of 3 (at the second boundary, past the limit, and at the last)", f.commits, len(f.committed))
	}
}

// TestTxnSinkTimeoutOnBed, on the bed's Kafka: a PostgreSQL transaction
// streams into an open Kafka transaction (past the carry limit) for
// longer than transaction.timeout.ms (1 s here), until the coordinator's
// check (every transaction.abort.timed.out.transaction.cleanup.interval.ms,
// 10 s by default, as the bed keeps it) aborts it. The sink does not stop
// as fenced: the session ends as an abort, the next one sends the
// transaction again from the committed position, and a read_committed
// reader sees every record once.
func TestTxnSinkTimeoutOnBed(t *testing.T) {
	p := txnBedProducer(t)
	suffix := time.Now().UnixNano()
	topic, offsets, id := fmt.Sprintf("txn-timeout-%d", suffix), fmt.Sprintf("txn-timeout-offsets-%d", suffix), fmt.Sprintf("txn-timeout-test-%d", suffix)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	s, err := New(p, p.Offsets(offsets, id, "srv", -1), Config{TransactionalID: id, Timeout: time.Second, CarryRecords: 1, CarryBytes: 1 << 20}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, _, err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	send := func(v string) chan error {
		t.Helper()
		ch := make(chan error, 1)
		if err := s.Send(ctx, router.Record{Topic: topic, Partition: -1, Key: []byte("k"), Value: []byte(v), EventID: v}, func(err error) { ch <- err }); err != nil {
			t.Fatal(err)
		}
		return ch
	}
	send("a")
	s.Boundary(0x100)
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// The big transaction: each record is written into the open Kafka
	// transaction at once (carry limit 1), until the coordinator aborts it.
	started := time.Now()
	var ackErr error
	for n := 0; ackErr == nil; n++ {
		if time.Since(started) > 60*time.Second {
			t.Fatal("the coordinator did not abort a transaction open 60 s with transaction.timeout.ms 1000")
		}
		ackErr = waitAck(t, send(fmt.Sprintf("big-%d", n)))
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("after %s: %v", time.Since(started).Round(100*time.Millisecond), ackErr)
	if !errors.Is(ackErr, ErrAborted) || errors.Is(ackErr, ErrFenced) || !strings.Contains(ackErr.Error(), "transaction.timeout.ms") {
		t.Fatalf("the record after the coordinator's timeout abort: %v; want ErrAborted naming transaction.timeout.ms, not fenced", ackErr)
	}
	if pos, _, err := s.Start(ctx); err != nil || pos.LSN != 0x100 {
		t.Fatalf("the next session's Start: %+v, %v; want the committed 0x100", pos, err)
	}
	send("big-0")
	send("big-1")
	s.Boundary(0x200)
	if err := s.Flush(ctx); err != nil {
		t.Fatalf("the transaction sent again: %v", err)
	}
	if got := waitCommitted(t, p, topic, "a,big-0,big-1"); got != "a,big-0,big-1" {
		t.Fatalf("read_committed sees %v; want a,big-0,big-1: each once, the timed-out transaction's records not at all", got)
	}
	if pos, _, err := p.Offsets(offsets, id, "srv", -1).Load(ctx); err != nil || pos.LSN != 0x200 {
		t.Fatalf("Load: %+v, %v; want 0x200", pos, err)
	}
}

// The last session ended for another reason (PostgreSQL gone) with a
// Kafka transaction open, longer than transaction.timeout.ms: Start's
// abort is answered as fenced, but the coordinator only timed it out, and
// the next session goes on.
func TestTxnSinkStartAfterTimedOutOpenTransaction(t *testing.T) {
	f := &fakeTxn{}
	s := newFakeTxnSink(t, f, Config{})
	if _, _, err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.workMu.Lock()
	s.w.open = true // as a session that ended with its transaction open
	s.workMu.Unlock()
	f.mu.Lock()
	f.abortErr, f.timedOut = errFencedByBroker, true
	f.mu.Unlock()
	if _, _, err := s.Start(context.Background()); err != nil {
		t.Fatalf("Start after the coordinator timed the open transaction out: %v", err)
	}
	if err := sendTxn(t, s, "a", 100); err != nil {
		t.Fatal(err)
	}
}
