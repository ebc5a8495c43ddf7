package relay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/outboxrelay/outboxrelay/capture"
	"github.com/outboxrelay/outboxrelay/router"
	"github.com/outboxrelay/outboxrelay/sink"
)

// txnFake is a Transactional sink in memory: Send acks at once (written
// inside the open transaction); commit commits up to the last boundary;
// it is also the position store, as TxnSink is.
type txnFake struct {
	mu         sync.Mutex
	sent       []string // event ids, in Send order
	boundaries []capture.LSN
	uncommited int
	pos        capture.LSN // committed position
	origin     string      // the committed position's origin
	err        error
}

func (f *txnFake) SessionOrigin(string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.origin
}

func (s *fakeStream) Origin() (string, bool) {
	if s.origin == "" {
		return "srv/1", !s.created
	}
	return s.origin, !s.created
}

func (f *txnFake) Send(_ context.Context, r *router.Record, ack func(error)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	f.sent = append(f.sent, r.EventID)
	f.uncommited++
	ack(nil)
	return nil
}

func (f *txnFake) Flush(context.Context) error { return nil }

func (f *txnFake) Boundary(end capture.LSN) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.boundaries = append(f.boundaries, end)
}

// commit commits everything sent, at the last boundary.
func (f *txnFake) commit() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n := len(f.boundaries); n > 0 && f.boundaries[n-1] > 0 {
		f.pos = f.boundaries[n-1]
	}
	f.uncommited = 0
}

func (f *txnFake) Committed() (capture.LSN, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pos, f.err == nil && f.uncommited == 0
}

func (f *txnFake) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

func (f *txnFake) Load(context.Context) (Recorded, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return Recorded{End: f.pos, Origin: f.origin, By: ByRelay}, f.pos != 0, nil
}
func (f *txnFake) Save(_ context.Context, _ capture.LSN, _ string, ack func(error)) error {
	ack(nil)
	return nil
}
func (f *txnFake) Where() string  { return "memory" }
func (f *txnFake) Forget() string { return "forget it" }

func (f *txnFake) state() ([]string, []capture.LSN) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.sent), slices.Clone(f.boundaries)
}

// TestConfirmsOnlyWhatKafkaCommitted pins invariant 10: with a
// transactional sink the records are acknowledged as written inside the
// open Kafka transaction, but the position the stream may confirm stays at
// the last Kafka commit until it covers them; each PostgreSQL commit is a
// boundary.
func TestConfirmsOnlyWhatKafkaCommitted(t *testing.T) {
	evs := append(tx(100, 140, outboxRow("e1", "order"), outboxRow("e2", "order")), tx(200, 240, outboxRow("e3", "order"))...)
	st := newFakeStream(50, evs...)
	ts := &txnFake{}
	opt := testOptions(t, &fakeSource{streams: []*fakeStream{st}}, ts)
	opt.Positions = ts
	stop := runAsync(t, opt)
	waitUntil(t, "three records sent", func() bool { s, b := ts.state(); return len(s) == 3 && len(b) == 2 })
	if got := st.confirmed(); got != 50 {
		t.Fatalf("confirmed %s before the Kafka commit; want the slot's 0/32", got)
	}
	if _, b := ts.state(); !slices.Equal(b, []capture.LSN{140, 240}) {
		t.Fatalf("boundaries %v; want the two commits' end LSNs", b)
	}
	ts.commit()
	waitUntil(t, "the commit confirmed", func() bool { return st.confirmed() == 240 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// Regression (review of issue 17, finding 2): an orderly stop counted as
// complete (so slot.drop.on.stop dropped the slot) as soon as every record
// was written inside the open Kafka transaction, which Close then aborted:
// those events were in neither Kafka nor the slot.
func TestStopIncompleteWhileKafkaUncommitted(t *testing.T) {
	st := newFakeStream(50, tx(100, 140, outboxRow("e1", "order"))...)
	ts := &txnFake{}
	opt := testOptions(t, &fakeSource{streams: []*fakeStream{st}}, ts)
	opt.Positions = ts
	stop := runAsync(t, opt)
	waitUntil(t, "the record sent", func() bool { s, _ := ts.state(); return len(s) == 1 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if st.clean {
		t.Fatal("the stop was reported orderly and complete while the Kafka transaction was not committed")
	}
}

// TestSkipsWhatKafkaCommitted: after a restart the stream starts from the
// slot, behind the position the last Kafka transaction recorded; the
// transactions at or below it are skipped, not sent again, and later
// ones are sent.
func TestSkipsWhatKafkaCommitted(t *testing.T) {
	evs := append(tx(100, 140, outboxRow("e1", "order")), tx(200, 240, outboxRow("e2", "order"))...)
	evs = append(evs, tx(240, 280, outboxRow("e3", "order"))...) // commit LSN = the recorded end: sent
	evs = append(evs, tx(300, 340, outboxRow("e4", "order"))...)
	st := newFakeStream(50, evs...)
	st.end = capture.ErrEnd
	ts := &txnFake{pos: 240, origin: "srv/1"}
	opt := testOptions(t, &fakeSource{streams: []*fakeStream{st}}, ts)
	opt.Positions = ts
	if err := Run(context.Background(), opt); err != nil {
		t.Fatal(err)
	}
	sent, b := ts.state()
	if !slices.Equal(sent, []string{"e3", "e4"}) || !slices.Equal(b, []capture.LSN{280, 340}) {
		t.Fatalf("sent %v with boundaries %v; want e3 and e4 (the first two are in Kafka), boundaries 0/118 0/154", sent, b)
	}
}

// Regression (review of issue 17, finding 7): the skip rule applied
// whatever the source did; after a failover (a new timeline), a restore
// elsewhere or a slot created anew, the transactions below the recorded
// position are not the ones Kafka has, and were silently skipped (lost).
// It applies only on the same server and timeline with a resumed slot.
func TestSkipsNothingOnAnotherOrigin(t *testing.T) {
	for _, tc := range []struct {
		name, recorded, stream string
		created                bool
	}{
		{"new timeline", "srv/1", "srv/2", false},
		{"slot created", "srv/1", "srv/1", true},
		{"position without origin", "", "srv/1", false},
	} {
		evs := append(tx(100, 140, outboxRow("e1", "order")), tx(300, 340, outboxRow("e2", "order"))...)
		st := newFakeStream(50, evs...)
		st.end, st.origin, st.created = capture.ErrEnd, tc.stream, tc.created
		ts := &txnFake{pos: 240, origin: tc.recorded}
		opt := testOptions(t, &fakeSource{streams: []*fakeStream{st}}, ts)
		opt.Positions = ts
		if err := Run(context.Background(), opt); err != nil {
			t.Fatal(err)
		}
		if sent, _ := ts.state(); !slices.Equal(sent, []string{"e1", "e2"}) {
			t.Errorf("%s: sent %v; want e1 and e2 (nothing skipped)", tc.name, sent)
		}
	}
}

// TestTransactionErrorsRetryOrStop: an aborted Kafka transaction ends
// the session and the next resumes; a fenced one stops the relay with
// the takeover named.
func TestTransactionErrorsRetryOrStop(t *testing.T) {
	r := &relay{opt: Options{Source: &fakeSource{}}}
	aborted := fmt.Errorf("%w: %w", sink.ErrTxnAborted, errors.New("OUT_OF_ORDER_SEQUENCE_NUMBER"))
	if !r.retryable(aborted) || !r.retryable(fmt.Errorf("%w: %w", ErrRecordFailed, aborted)) {
		t.Error("an aborted transaction must be retried from the last committed position")
	}
	// Regression (review of issue 17, finding 9): a permanent refusal
	// (MESSAGE_TOO_LARGE, a missing ACL) was retried as aborted for ever.
	if r.retryable(fmt.Errorf("%w: %w", sink.ErrTxnRejected, errors.New("MESSAGE_TOO_LARGE"))) {
		t.Error("a transaction Kafka refused permanently must stop the relay")
	}
	fenced := fmt.Errorf("exactly-once: fenced: another outboxrelay took over: %w", sink.ErrTxnFenced)
	if r.retryable(fenced) {
		t.Error("a fenced producer must stop the relay")
	}
	st := newFakeStream(50, tx(100, 140, outboxRow("e1", "order"))...)
	ts := &txnFake{err: fenced}
	opt := testOptions(t, &fakeSource{streams: []*fakeStream{st}}, ts)
	opt.Positions = ts
	if err := Run(context.Background(), opt); !errors.Is(err, sink.ErrTxnFenced) {
		t.Fatalf("Run: %v; want the fenced error", err)
	}
}

// TestCommittedProgress: the confirmed position with a transactional
// sink is the checkpoint's while every record is committed, else held at
// the last commit, never below the slot's own position.
func TestCommittedProgress(t *testing.T) {
	ck := NewCheckpoint(100)
	tr, _ := ck.Begin(150)
	tr.Add(1)
	tr.Ack(nil)
	if err := tr.Commit(150, 180); err != nil {
		t.Fatal(err)
	}
	ts := &txnFake{uncommited: 1}
	p := &committedProgress{Checkpoint: ck, sink: ts, start: 100}
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
	ts.err = sink.ErrTxnAborted
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

// Regression (review of issue 17, finding 11): a Transactional sink used
// only as Sink never had its sessions started, and every transaction
// failed and was retried for ever; Run refuses it.
func TestRunRefusesTransactionalWithoutPositions(t *testing.T) {
	ts := &txnFake{}
	opt := testOptions(t, &fakeSource{streams: []*fakeStream{newFakeStream(50)}}, ts)
	if err := Run(context.Background(), opt); err == nil || !strings.Contains(err.Error(), "Options.Positions") {
		t.Fatalf("Run: %v; want the refusal naming Options.Positions", err)
	}
}
