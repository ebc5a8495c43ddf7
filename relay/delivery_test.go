package relay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"

	"github.com/outboxrelay/outboxrelay/capture"
	"github.com/outboxrelay/outboxrelay/internal/terminal"
	"github.com/outboxrelay/outboxrelay/router"
)

// txnFake is an exactly-once Delivery in memory, as exactlyonce.Delivery is
// the service's: Send acks at once (written inside the open transaction);
// commit commits up to the last End; Open reads the committed position;
// what may be confirmed is held at it (committedFake).
type txnFake struct {
	mu         sync.Mutex
	sent       []string // event ids, in Send order
	boundaries []capture.LSN
	uncommited int
	pos        capture.LSN // committed position
	origin     string      // the committed position's origin
	err        error
	opened     int    // Open calls
	streamed   string // the origin Confirmable was given
}

func (f *txnFake) Open(context.Context, Opening) (Recorded, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.opened++
	return Recorded{End: f.pos, Origin: f.origin, By: ByRelay}, f.pos != 0, nil
}

func (f *txnFake) Confirmable(ck capture.Progress, st Streaming) capture.Progress {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.streamed = st.Origin
	return &committedFake{Progress: ck, f: f, start: st.From}
}

// committedFake holds the checkpoint's progress at the fake's commits.
type committedFake struct {
	capture.Progress
	f     *txnFake
	start capture.LSN
}

func (p *committedFake) Confirmed() capture.LSN {
	c := p.Progress.Confirmed()
	if pos, all := p.f.Committed(); !all {
		c = max(min(c, pos), p.start)
	}
	return c
}

func (p *committedFake) InFlight() int {
	n := p.Progress.InFlight()
	if _, all := p.f.Committed(); !all {
		n = max(n, 1)
	}
	return n
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

func (f *txnFake) End(end capture.LSN) {
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

func (f *txnFake) Record(_ context.Context, _ capture.LSN, _ string, ack func(error)) error {
	ack(nil)
	return nil
}
func (f *txnFake) Where() string  { return "memory" }
func (f *txnFake) Forget() string { return "forget it" }
func (f *txnFake) Close() error   { return nil }

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
	opt := testOptions(t, &fakeSource{streams: []*fakeStream{st}}, nil)
	opt.Delivery = ts
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
	opt := testOptions(t, &fakeSource{streams: []*fakeStream{st}}, nil)
	opt.Delivery = ts
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
	opt := testOptions(t, &fakeSource{streams: []*fakeStream{st}}, nil)
	opt.Delivery = ts
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
		opt := testOptions(t, &fakeSource{streams: []*fakeStream{st}}, nil)
		opt.Delivery = ts
		if err := Run(context.Background(), opt); err != nil {
			t.Fatal(err)
		}
		if sent, _ := ts.state(); !slices.Equal(sent, []string{"e1", "e2"}) {
			t.Errorf("%s: sent %v; want e1 and e2 (nothing skipped)", tc.name, sent)
		}
	}
}

// TestTransactionErrorsRetryOrStop: an aborted Kafka transaction (marked
// a session error where it arises) ends the session and the next resumes;
// a fenced one (marked final) stops the relay with the takeover named.
// sink's TestTxnErrorsMarked pins the marks of its sentinels.
func TestTransactionErrorsRetryOrStop(t *testing.T) {
	r := &relay{opt: Options{Source: &fakeSource{}}}
	errAborted := terminal.Session(errors.New("sink: the Kafka transaction was aborted"))
	aborted := fmt.Errorf("%w: %w", errAborted, errors.New("OUT_OF_ORDER_SEQUENCE_NUMBER"))
	if !r.retryable(aborted) || !r.retryable(fmt.Errorf("%w: %w", ErrRecordFailed, aborted)) {
		t.Error("an aborted transaction must be retried from the last committed position")
	}
	// Regression (review of issue 17, finding 9): a permanent refusal
	// (MESSAGE_TOO_LARGE, a missing ACL) was retried as aborted for ever.
	errRejected := terminal.Final(errors.New("sink: Kafka refused the transaction permanently"))
	if r.retryable(fmt.Errorf("%w: %w", errRejected, errors.New("MESSAGE_TOO_LARGE"))) {
		t.Error("a transaction Kafka refused permanently must stop the relay")
	}
	errFenced := terminal.Final(errors.New("sink: fenced by a newer producer"))
	fenced := fmt.Errorf("exactly-once: fenced: another outboxrelay took over: %w", errFenced)
	if r.retryable(fenced) {
		t.Error("a fenced producer must stop the relay")
	}
	st := newFakeStream(50, tx(100, 140, outboxRow("e1", "order"))...)
	ts := &txnFake{err: fenced}
	opt := testOptions(t, &fakeSource{streams: []*fakeStream{st}}, nil)
	opt.Delivery = ts
	if err := Run(context.Background(), opt); !errors.Is(err, errFenced) {
		t.Fatalf("Run: %v; want the fenced error", err)
	}
}

// Regression (review of issue 17, finding 11): a transactional sink used
// only as the sink (not also as the position store) never had its
// sessions started, and every transaction failed and was retried for
// ever. One Delivery now does both: every session opens it, before the
// stream opens, and gives it the stream's origin.
func TestEverySessionOpensTheDelivery(t *testing.T) {
	first := newFakeStream(50, tx(100, 140, outboxRow("e1", "order"))...)
	first.end = fmt.Errorf("receiving WAL: %w", io.ErrUnexpectedEOF)
	second := newFakeStream(140)
	second.end, second.origin = capture.ErrEnd, "srv/2"
	ts := &txnFake{}
	src := &openCounter{fakeSource: &fakeSource{streams: []*fakeStream{first, second}}, delivery: ts}
	opt := testOptions(t, src, nil)
	opt.Delivery = ts
	done := make(chan error, 1)
	go func() { done <- Run(context.Background(), opt) }()
	waitUntil(t, "e1 sent", func() bool { s, _ := ts.state(); return len(s) == 1 })
	ts.commit()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.opened != 2 || !slices.Equal(src.openedBefore, []int{1, 2}) || ts.streamed != "srv/2" {
		t.Fatalf("opened %d times (before the stream: %v), last origin %q; want 2, each before its stream, srv/2", ts.opened, src.openedBefore, ts.streamed)
	}
}

// openCounter notes, at each stream's Open, how often the delivery was
// opened.
type openCounter struct {
	*fakeSource
	delivery     *txnFake
	openedBefore []int
}

func (o *openCounter) Open(ctx context.Context, known capture.Known) (capture.Stream, error) {
	o.delivery.mu.Lock()
	o.openedBefore = append(o.openedBefore, o.delivery.opened)
	o.delivery.mu.Unlock()
	return o.fakeSource.Open(ctx, known)
}
