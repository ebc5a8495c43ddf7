package exactlyonce

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/outboxrelay/outboxrelay/internal/kafkabatch"
	"github.com/outboxrelay/outboxrelay/router"
	"github.com/outboxrelay/outboxrelay/sink"
)

func newTestTxnSink(t *testing.T, p *sink.Producer, id, offsets string) *Sink {
	t.Helper()
	s, err := New(p, p.Offsets(offsets, id, "srv", -1), Config{TransactionalID: id, Timeout: 30 * time.Second}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// waitCommitted reads the topic's partition 0 read_committed until it
// holds want (the commit markers follow a commit by a moment) or 10 s
// passed, and returns what it read last.
func waitCommitted(t *testing.T, p *sink.Producer, topic, want string) string {
	t.Helper()
	var got string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if got = strings.Join(committedValues(t, p, topic, 1), ","); got == want {
			break
		}
	}
	return got
}

// committedValues reads topic's partitions read_committed and returns the
// values in offset order per partition, all partitions together.
func committedValues(t *testing.T, p *sink.Producer, topic string, parts int) []string {
	t.Helper()
	var out []string
	c, done := bedClient(p)
	defer done()
	for part := range parts {
		f, err := kafkabatch.FetchCommitted(context.Background(), c, kafkabatch.TopicPartition{Topic: topic, Partition: part}, 0, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range f.Batches {
			for _, r := range b.Records {
				out = append(out, string(r.Value))
			}
		}
	}
	return out
}

// TestTxnSinkOnBed pins the transactional sink's contract on the bed's
// Kafka (invariant 10): records up to a boundary commit together with the
// boundary's position in the offsets topic; records after it stay out
// (a PostgreSQL transaction not finished) and are aborted by the next
// Start; a second sink with the same transactional.id fences the first,
// whose next commit fails as fenced.
func TestTxnSinkOnBed(t *testing.T) {
	p := txnBedProducer(t)
	suffix := time.Now().UnixNano()
	topic, offsets, id := fmt.Sprintf("txn-sink-%d", suffix), fmt.Sprintf("txn-offsets-%d", suffix), fmt.Sprintf("txn-sink-test-%d", suffix)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	s := newTestTxnSink(t, p, id, offsets)
	if _, found, err := s.Start(ctx); err != nil || found {
		t.Fatalf("first Start: found %v, err %v; want nothing recorded", found, err)
	}
	a := newAcks()
	send := func(s *Sink, v string) {
		t.Helper()
		if err := s.Send(ctx, router.Record{Topic: topic, Partition: -1, Key: []byte("k"), Value: []byte(v), EventID: v}, a.cb(v)); err != nil {
			t.Fatal(err)
		}
	}
	send(s, "a")
	send(s, "b")
	s.Boundary(0x100)
	send(s, "c") // its PostgreSQL transaction never ends
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if pos, all := s.Committed(); pos != 0x100 || all {
		t.Fatalf("Committed() = %#x, %v; want 0x100 and a record not committed", pos, all)
	}
	if got := waitCommitted(t, p, topic, "a,b"); got != "a,b" {
		t.Fatalf("read_committed sees %v; want a,b", got)
	}
	if pos, found, err := s.Start(ctx); err != nil || !found || pos.LSN != 0x100 {
		t.Fatalf("Start: %+v, found %v, err %v; want the committed position 0x100", pos, found, err)
	}
	if err := a.err("c"); !errors.Is(err, ErrAborted) {
		t.Fatalf("the unfinished record's ack: %v; want ErrAborted", err)
	}
	send(s, "d")
	taker := newTestTxnSink(t, p, id, offsets)
	if pos, _, err := taker.Start(ctx); err != nil || pos.LSN != 0x100 {
		t.Fatalf("the second instance's Start: %+v, %v; want 0x100", pos, err)
	}
	s.Boundary(0x200)
	if err := s.Flush(ctx); !errors.Is(err, ErrFenced) || !strings.Contains(err.Error(), "took over") {
		t.Fatalf("the fenced instance's Flush: %v; want ErrFenced naming the takeover", err)
	}
	send(taker, "e")
	taker.Boundary(0x300)
	if err := taker.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := waitCommitted(t, p, topic, "a,b,e"); got != "a,b,e" {
		t.Fatalf("read_committed sees %v; want a,b,e (c and d never committed)", got)
	}
	if pos, _, err := p.Offsets(offsets, id, "srv", -1).Load(ctx); err != nil || pos.LSN != 0x300 {
		t.Fatalf("Load: %+v, %v; want 0x300", pos, err)
	}
}

// TestTxnSinkIntervalBoundary: with transaction.boundary=interval a
// transaction commits once the interval since it opened passed, at the
// last boundary, without more records coming.
func TestTxnSinkIntervalBoundary(t *testing.T) {
	p := txnBedProducer(t)
	suffix := time.Now().UnixNano()
	topic, id := fmt.Sprintf("txn-interval-%d", suffix), fmt.Sprintf("txn-interval-test-%d", suffix)
	s, err := New(p, p.Offsets("txn-offsets-"+id, id, "srv", -1), Config{TransactionalID: id, Timeout: 30 * time.Second, Boundary: BoundaryInterval, Interval: 500 * time.Millisecond},
		testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, _, err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	a := newAcks()
	if err := s.Send(ctx, router.Record{Topic: topic, Partition: -1, Key: []byte("k"), Value: []byte("a"), EventID: "a"}, a.cb("a")); err != nil {
		t.Fatal(err)
	}
	s.Boundary(0x10)
	start := time.Now()
	for {
		if pos, all := s.Committed(); all && pos == 0x10 {
			break
		}
		if time.Since(start) > 10*time.Second {
			t.Fatal("not committed 10 s after the boundary")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Errorf("committed %s after the boundary; want about the 500 ms interval", took)
	}
	if got := waitCommitted(t, p, topic, "a"); got != "a" {
		t.Fatalf("read_committed sees %q; want a", got)
	}
}
