package exactlyonce

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/outboxrelay/outboxrelay/capture"
	"github.com/outboxrelay/outboxrelay/internal/terminal"
	"github.com/outboxrelay/outboxrelay/relay"
	"github.com/outboxrelay/outboxrelay/router"
	"github.com/outboxrelay/outboxrelay/sink"
)

// committedFake is a Sink's Committed in memory.
type committedFake struct {
	pos        capture.LSN
	uncommited int
	err        error
}

func (f *committedFake) Committed() (capture.LSN, bool) {
	return f.pos, f.err == nil && f.uncommited == 0
}

// TestCommittedProgress (moved from relay, with committedProgress): the
// confirmed position with Kafka transactions is the checkpoint's while
// every record is committed, else held at the last commit, never below
// the slot's own position.
func TestCommittedProgress(t *testing.T) {
	ck := relay.NewCheckpoint(100)
	tr, _ := ck.Begin(150)
	tr.Add(1)
	tr.Ack(nil)
	if err := tr.Commit(150, 180); err != nil {
		t.Fatal(err)
	}
	ts := &committedFake{uncommited: 1}
	p := &committedProgress{Progress: ck, txn: ts, start: 100}
	if got := p.Confirmed(); got != 100 {
		t.Errorf("uncommitted records, no commit yet: confirmed %s; want the slot's 0/64", got)
	}
	// Regression (review of issue 17, finding 11): InFlight was the
	// checkpoint's, 0 while records waited for the Kafka commit, so the
	// commit reached the slot only at the next status interval.
	if got := p.InFlight(); got == 0 {
		t.Error("InFlight 0 while a record is not committed in Kafka")
	}
	ts.pos = 120
	if got := p.Confirmed(); got != 120 {
		t.Errorf("uncommitted records: confirmed %s; want the last commit's 0/78", got)
	}
	ts.err = ErrAborted
	if got := p.Confirmed(); got != 120 {
		t.Errorf("aborted: confirmed %s; want the last commit's 0/78", got)
	}
	ts.err, ts.uncommited = nil, 0
	if got := p.Confirmed(); got != 180 {
		t.Errorf("all committed: confirmed %s; want the checkpoint's 0/B4", got)
	}
	// Regression (finding 11): Confirmed went back to the last commit's
	// position once a new record was sent after everything was committed.
	ts.uncommited = 1
	if got := p.Confirmed(); got != 180 {
		t.Errorf("a new record after all committed: confirmed %s; want 0/B4 still (never backwards)", got)
	}
}

// TestTxnErrorsMarked: the transactional sink's errors carry, where they
// arise, what they mean for the relay (relay.retryable asks the marks):
// aborted ends the session, fenced and rejected end the relay, and so do
// an unusable offsets topic and an unfinished Debezium snapshot.
func TestTxnErrorsMarked(t *testing.T) {
	aborted := fmt.Errorf("%w: %w", ErrAborted, errors.New("OUT_OF_ORDER_SEQUENCE_NUMBER"))
	if !terminal.IsSession(aborted) || terminal.IsFinal(aborted) {
		t.Error("an aborted transaction must end only the session")
	}
	for _, err := range []error{ErrFenced, ErrRejected, sink.ErrOffsetsUnusable, sink.ErrDebeziumSnapshot} {
		if w := fmt.Errorf("exactly-once: %w: broker said no", err); !terminal.IsFinal(w) {
			t.Errorf("%v: not final", err)
		}
	}
}

// TestExactlyOnceDelivery drives the exactly-once delivery as a relay
// session does, on a Sink with a fake transactional producer: Open
// gives the sink the lock check and starts its session, Confirmable gives
// it the stream's origin and holds the checkpoint at what Kafka
// committed, End and Flush commit, and the position is then confirmed.
func TestExactlyOnceDelivery(t *testing.T) {
	ctx := context.Background()
	f := &fakeTxn{}
	s := newFakeTxnSink(t, f, Config{})
	d := NewDelivery(s)
	asked := false
	if _, found, err := d.Open(ctx, relay.Opening{Holds: func(context.Context) (bool, error) { asked = true; return true, nil }}); found || err != nil {
		t.Fatalf("Open: found %v, err %v; want nothing recorded, no error", found, err)
	}
	if held, err := s.holding(ctx); !held || err != nil || !asked {
		t.Fatalf("the sink's lock check: %v, %v (asked %v); want Opening.Holds", held, err, asked)
	}
	ck := relay.NewCheckpoint(0x100)
	p := d.Confirmable(ck, relay.Streaming{Origin: "7/1", From: 0x100})
	if got := s.originNow(); got != "7/1" {
		t.Fatalf("the sink records origin %q; want the stream's 7/1", got)
	}
	tx, err := ck.Begin(0x150)
	if err != nil {
		t.Fatal(err)
	}
	tx.Add(1)
	if err := d.Send(ctx, &router.Record{Topic: "t", Partition: 0, Value: []byte("v")}, tx.Ack); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(0x150, 0x180); err != nil {
		t.Fatal(err)
	}
	if got := p.Confirmed(); got != 0x100 {
		t.Fatalf("confirmed %s before the Kafka commit; want the slot's 0/100", got)
	}
	d.End(0x180)
	if err := d.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := f.values(); len(got) != 1 || got[0] != "v" {
		t.Fatalf("committed %q; want the one record", got)
	}
	if got, n := p.Confirmed(), p.InFlight(); got != 0x180 || n != 0 {
		t.Fatalf("after the commit: confirmed %s, in flight %d; want 0/180, 0", got, n)
	}
	if d.Err() != nil {
		t.Fatalf("Err = %v; want nil", d.Err())
	}
	if acked := make(chan error, 1); d.Record(ctx, 0x180, "7/1", func(err error) { acked <- err }) != nil || <-acked != nil {
		t.Fatal("Record must acknowledge at once: each Kafka commit carries its position")
	}
}
