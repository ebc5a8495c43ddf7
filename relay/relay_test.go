package relay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/outboxrelay/outboxrelay/capture"
	"github.com/outboxrelay/outboxrelay/router"
)

// fakeSource opens scripted streams, one per entry of streams; Open fails
// with openErr when set.
type fakeSource struct {
	mu      sync.Mutex
	streams []*fakeStream
	opened  int
	openErr error
}

func (f *fakeSource) Open(ctx context.Context, known capture.Known) (capture.Stream, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.openErr != nil {
		return nil, f.openErr
	}
	if f.opened == len(f.streams) {
		return nil, capture.ErrEnd
	}
	st := f.streams[f.opened]
	st.openedWith = known.Confirmed
	st.known = known
	f.opened++
	return st, nil
}

func (f *fakeSource) Acquire(ctx context.Context) error       { return nil }
func (f *fakeSource) Retryable(err error) bool                { return !errors.Is(err, errFatal) }
func (f *fakeSource) Holds(ctx context.Context) (bool, error) { return true, nil }
func (f *fakeSource) Close()                                  {}

var errFatal = errors.New("fatal source error")

// fakeStream yields its events, then waits for ctx to end (or ends with
// end when set).
type fakeStream struct {
	mu         sync.Mutex // guards events, next, p and snapDone against the test
	from       capture.LSN
	events     []capture.Event
	end        error
	origin     string // Origin's server ("srv/1" when empty)
	created    bool   // Origin: the slot was created, not resumed
	next       int
	p          capture.Progress
	openedWith capture.LSN
	known      capture.Known
	snapDone   bool
	closed     chan struct{}
	clean      bool
	final      capture.LSN
	keepAlives atomic.Int64
}

func newFakeStream(from capture.LSN, evs ...capture.Event) *fakeStream {
	return &fakeStream{from: from, events: evs, closed: make(chan struct{})}
}

func (s *fakeStream) From() capture.LSN { return s.from }
func (s *fakeStream) Start(ctx context.Context, p capture.Progress) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.p = p
	return nil
}
func (s *fakeStream) Next(ctx context.Context) (*capture.Event, error) {
	for {
		s.mu.Lock()
		if s.next < len(s.events) {
			ev := s.events[s.next]
			s.next++
			s.mu.Unlock()
			return &ev, nil
		}
		s.mu.Unlock()
		if s.end != nil {
			return nil, s.end
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Millisecond): // events may be appended meanwhile
		}
	}
}
func (s *fakeStream) KeepAlive(ctx context.Context) error {
	s.keepAlives.Add(1)
	return nil
}
func (s *fakeStream) Origin() (string, bool) {
	if s.origin == "" {
		return "srv/1", !s.created
	}
	return s.origin, !s.created
}
func (s *fakeStream) SnapshotDone(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.snapDone = true
	return nil
}

// confirmed is what the relay's progress allows, as the stream reads it.
func (s *fakeStream) confirmed() capture.LSN {
	s.mu.Lock()
	p := s.p
	s.mu.Unlock()
	if p == nil {
		return 0
	}
	return p.Confirmed()
}

func (s *fakeStream) state() (next int, snapDone bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next, s.snapDone
}

func (s *fakeStream) appendEvents(evs ...capture.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, evs...)
}
func (s *fakeStream) Close(ctx context.Context, end capture.Ending) error {
	s.clean, s.final = end.Orderly && end.Complete, s.confirmed()
	close(s.closed)
	return nil
}

// outboxRow is a row of the default outbox table.
func outboxRow(id, aggType string) *capture.Row {
	col := func(name, v string) capture.Column { return capture.Column{Name: name, OID: 25, Text: []byte(v)} }
	return &capture.Row{Op: capture.OpCreate, Table: "public.outbox", Columns: []capture.Column{
		col("id", id), col("aggregatetype", aggType), col("aggregateid", "a1"), col("type", "T"),
		{Name: "payload", OID: 3802, Text: []byte(`{"x":1}`)},
	}}
}

func tx(begin, end capture.LSN, rows ...*capture.Row) []capture.Event {
	evs := []capture.Event{{Kind: capture.KindBegin, LSN: begin, CommitTime: time.Unix(1, 0)}}
	for _, r := range rows {
		evs = append(evs, capture.Event{Kind: capture.KindRow, LSN: begin, Row: r})
	}
	return append(evs, capture.Event{Kind: capture.KindCommit, LSN: begin, EndLSN: end})
}

// holdSink keeps acks until release; sent lists event ids.
type holdSink struct {
	async sync.WaitGroup // acks on their way when not holding
	mu    sync.Mutex
	acks  []func(error)
	sent  []string
	hold  bool
}

func (s *holdSink) Send(_ context.Context, r *router.Record, ack func(error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = append(s.sent, r.EventID)
	if s.hold {
		s.acks = append(s.acks, ack)
		return nil
	}
	s.async.Add(1)
	go func() {
		defer s.async.Done()
		ack(nil)
	}()
	return nil
}

func (s *holdSink) Flush(ctx context.Context) error {
	s.async.Wait()
	for {
		s.mu.Lock()
		n := len(s.acks)
		s.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func (s *holdSink) release() {
	s.mu.Lock()
	acks := s.acks
	s.acks, s.hold = nil, false
	s.mu.Unlock()
	for i := len(acks) - 1; i >= 0; i-- { // in reverse: order must not matter
		acks[i](nil)
	}
}

func testRouter(t *testing.T) *router.Router {
	t.Helper()
	cfg, _, err := router.ParseConfig(map[string]string{"transforms": "outbox", "transforms.outbox.type": router.EventRouterClass, "topic.prefix": "p"})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := router.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

func testOptions(t *testing.T, src capture.Source, s testSink) Options {
	return Options{Source: src, Router: testRouter(t), Delivery: &atLeastOnce{sink: s}, MaxRetries: -1, RetryWait: 10 * time.Millisecond,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

// withPositions records the positions of opt's at-least-once delivery in
// store.
func withPositions(opt *Options, store positionStore) {
	opt.Delivery.(*atLeastOnce).store = store
}

// testSink is what the tests' sinks do.
type testSink interface {
	Send(ctx context.Context, rec *router.Record, ack func(error)) error
	Flush(ctx context.Context) error
}

// positionStore is what the tests' position stores do.
type positionStore interface {
	Load(ctx context.Context) (Recorded, bool, error)
	Save(ctx context.Context, pos capture.LSN, origin string, ack func(error)) error
	Where() string
	Forget() string
}

// atLeastOnce is the tests' at-least-once Delivery, as sink.AtLeastOnce
// is the service's: a test sink, with positions recorded in store (nil:
// nowhere).
type atLeastOnce struct {
	sink  testSink
	store positionStore
}

func (d *atLeastOnce) Open(ctx context.Context, _ Opening) (Recorded, bool, error) {
	if d.store == nil {
		return Recorded{}, false, nil
	}
	return d.store.Load(ctx)
}
func (d *atLeastOnce) Confirmable(ck capture.Progress, _ Streaming) capture.Progress { return ck }
func (d *atLeastOnce) Send(ctx context.Context, rec *router.Record, ack func(error)) error {
	return d.sink.Send(ctx, rec, ack)
}
func (d *atLeastOnce) End(capture.LSN) {}
func (d *atLeastOnce) Record(ctx context.Context, pos capture.LSN, origin string, ack func(error)) error {
	if d.store == nil {
		ack(nil)
		return nil
	}
	return d.store.Save(ctx, pos, origin, ack)
}
func (d *atLeastOnce) Where() string {
	if d.store == nil {
		return ""
	}
	return d.store.Where()
}
func (d *atLeastOnce) Forget() string {
	if d.store == nil {
		return ""
	}
	return d.store.Forget()
}
func (d *atLeastOnce) Flush(ctx context.Context) error { return d.sink.Flush(ctx) }
func (d *atLeastOnce) Err() error                      { return nil }
func (d *atLeastOnce) Close() error                    { return nil }

// runAsync runs the relay and returns a stop that cancels and waits.
func runAsync(t *testing.T, opt Options) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, opt) }()
	return func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not return within 10 s of cancel")
			return nil
		}
	}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestConfirmsOnlyAcknowledged pins invariant 1 through the whole data
// path: while Kafka holds two transactions' records, the position the
// source may confirm stays at the start; the idle keepalive after them
// moves nothing; once acks arrive (in reverse order) it reaches the second
// transaction's end, and then the idle position.
func TestConfirmsOnlyAcknowledged(t *testing.T) {
	evs := append(tx(100, 140, outboxRow("e1", "order"), outboxRow("e2", "order")), tx(200, 240, outboxRow("e3", "order"))...)
	evs = append(evs, capture.Event{Kind: capture.KindIdle, LSN: 300})
	st := newFakeStream(50, evs...)
	sink := &holdSink{hold: true}
	stop := runAsync(t, testOptions(t, &fakeSource{streams: []*fakeStream{st}}, sink))
	waitUntil(t, "three records sent", func() bool { sink.mu.Lock(); defer sink.mu.Unlock(); return len(sink.sent) == 3 })
	waitUntil(t, "every event read", func() bool { n, _ := st.state(); return n == len(evs) })
	if got := st.confirmed(); got != 50 {
		t.Fatalf("confirmed %s with every record unacknowledged; want the start, 0/32", got)
	}
	sink.release()
	waitUntil(t, "confirmed to reach the last commit", func() bool { return st.confirmed() >= 240 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	<-st.closed
	if !st.clean {
		t.Error("an orderly stop with everything acknowledged closed the stream as not clean")
	}
}

// TestStopDrainsOpenTransaction: a stop in the middle of a transaction
// reads on to its Commit, so its records are confirmed before Close.
func TestStopDrainsOpenTransaction(t *testing.T) {
	evs := tx(100, 140, outboxRow("e1", "order"), outboxRow("e2", "order"))
	st := newFakeStream(50, evs[:2]...) // Begin and one row, then waits
	sink := &holdSink{}
	opt := testOptions(t, &fakeSource{streams: []*fakeStream{st}}, sink)
	stop := runAsync(t, opt)
	waitUntil(t, "the first row sent", func() bool { sink.mu.Lock(); defer sink.mu.Unlock(); return len(sink.sent) == 1 })
	go func() { // the rest arrives after the stop
		time.Sleep(20 * time.Millisecond)
		st.appendEvents(evs[2:]...)
	}()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if st.final != 140 || !st.clean {
		t.Fatalf("closed at %s (clean %v); want the drained transaction's end 0/8C, clean", st.final, st.clean)
	}
}

// Regression (TestSIGTERMMidTransaction failed in CI): a stop that came
// while the session waited for in-flight budget in the middle of a
// transaction ended the wait with the stop's error, and the session
// abandoned the transaction at once instead of reading it to its Commit:
// its records already in Kafka were sent again after the restart.
func TestStopDrainsTransactionWaitingForBudget(t *testing.T) {
	evs := tx(100, 140, outboxRow("e1", "order"), outboxRow("e2", "order"))
	st := newFakeStream(50, evs...)
	sink := &holdSink{hold: true}
	opt := testOptions(t, &fakeSource{streams: []*fakeStream{st}}, sink)
	opt.MaxInFlightRecords = 1 // e2 waits for e1's ack
	stop := runAsync(t, opt)
	waitUntil(t, "the first row sent", func() bool { sink.mu.Lock(); defer sink.mu.Unlock(); return len(sink.sent) == 1 })
	go func() { // Kafka acknowledges after the stop
		time.Sleep(50 * time.Millisecond)
		sink.mu.Lock()
		sink.hold = false
		acks := sink.acks
		sink.acks = nil
		sink.mu.Unlock()
		for _, ack := range acks {
			ack(nil)
		}
	}()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if st.final != 140 || !st.clean {
		t.Fatalf("closed at %s (clean %v), sent %v; want the drained transaction's end 0/8C, clean", st.final, st.clean, sink.sent)
	}
}

// TestPoisonRow: a row the router rejects (a NULL route value) stops the
// relay with the router's error, having confirmed the transaction before
// it; under a poison policy it is handed over and the relay goes on.
func TestPoisonRow(t *testing.T) {
	bad := outboxRow("e2", "")
	bad.Columns[1].Null, bad.Columns[1].Text = true, nil
	script := func() []capture.Event {
		return append(tx(100, 140, outboxRow("e1", "order")), tx(200, 240, bad)...)
	}
	st := newFakeStream(50, script()...)
	err := Run(context.Background(), testOptions(t, &fakeSource{streams: []*fakeStream{st}}, &holdSink{}))
	var rowErr *router.RowError
	if !errors.As(err, &rowErr) || rowErr.EventID != "e2" || rowErr.Column != "aggregatetype" {
		t.Fatalf("Run: %v; want the router's RowError for e2's aggregatetype", err)
	}
	if st.final != 140 {
		t.Errorf("confirmed %s at the stop; want 0/8C, the end of the transaction before the poison row", st.final)
	}

	st = newFakeStream(50, script()...)
	var handed []string
	opt := testOptions(t, &fakeSource{streams: []*fakeStream{st}}, &holdSink{})
	opt.Poison = func(ctx context.Context, ev *router.Event, rec *router.Record, cause error, ack func(error)) error {
		handed = append(handed, cause.(*router.RowError).EventID)
		ack(nil)
		return nil
	}
	stop := runAsync(t, opt)
	waitUntil(t, "the poison transaction confirmed", func() bool { return st.confirmed() == 240 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if len(handed) != 1 || handed[0] != "e2" {
		t.Fatalf("poison policy got %v; want [e2]", handed)
	}
}

// TestSnapshotDoneAfterAcks: the source hears SnapshotDone only once
// Kafka acknowledged every snapshot row.
func TestSnapshotDoneAfterAcks(t *testing.T) {
	row := outboxRow("s1", "order")
	row.Op = capture.OpRead
	evs := []capture.Event{{Kind: capture.KindBegin, LSN: 50, Snapshot: true}, {Kind: capture.KindRow, LSN: 50, Row: row},
		{Kind: capture.KindCommit, LSN: 50, EndLSN: 50}, {Kind: capture.KindSnapshotDone, LSN: 50}}
	st := newFakeStream(50, evs...)
	sink := &holdSink{hold: true}
	stop := runAsync(t, testOptions(t, &fakeSource{streams: []*fakeStream{st}}, sink))
	waitUntil(t, "the snapshot row sent", func() bool { sink.mu.Lock(); defer sink.mu.Unlock(); return len(sink.sent) == 1 })
	time.Sleep(50 * time.Millisecond)
	if _, done := st.state(); done {
		t.Fatal("SnapshotDone was called while the snapshot row waited for Kafka")
	}
	sink.release()
	waitUntil(t, "SnapshotDone", func() bool { _, done := st.state(); return done })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// TestResumesFromConfirmed: after a failed session the next Open gets
// what the relay confirmed; ErrEnd ends the relay cleanly.
func TestResumesFromConfirmed(t *testing.T) {
	first := newFakeStream(50, tx(100, 140, outboxRow("e1", "order"))...)
	first.end = fmt.Errorf("receiving WAL: %w", io.ErrUnexpectedEOF)
	second := newFakeStream(140)
	second.end = capture.ErrEnd
	src := &fakeSource{streams: []*fakeStream{first, second}}
	if err := Run(context.Background(), testOptions(t, src, &holdSink{})); err != nil {
		t.Fatalf("Run: %v; want nil after ErrEnd", err)
	}
	if second.openedWith != 140 {
		t.Fatalf("second session opened with %s; want the first one's confirmed 0/8C", second.openedWith)
	}
}

// TestRunGivesUpAfterMaxRetries: errors.max.retries bounds the sessions
// that fail in a row, and the error says why.
func TestRunGivesUpAfterMaxRetries(t *testing.T) {
	src := &fakeSource{openErr: fmt.Errorf("connecting: %w", io.ErrUnexpectedEOF)}
	opt := testOptions(t, src, &holdSink{})
	opt.MaxRetries = 2
	err := Run(context.Background(), opt)
	if err == nil || !strings.Contains(err.Error(), "giving up after 2 retries (errors.max.retries)") {
		t.Fatalf("Run: %v; want it to give up after 2 retries", err)
	}
}

// TestRetryable pins the relay's own stop rules, before the source's. A
// regression it guards: a failed SASL login (kafka-go's error codes look
// like net.Error) was retried forever instead of stopping.
func TestRetryable(t *testing.T) {
	r := &relay{opt: Options{Source: &fakeSource{}}}
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"poison row", &router.RowError{EventID: "e"}, false},
		{"record Kafka refused for good", fmt.Errorf("checkpoint: %w: %w", ErrRecordFailed, kafka.SASLAuthenticationFailed), false},
		{"source says fatal", fmt.Errorf("x: %w", errFatal), false},
		{"source says retry", io.ErrUnexpectedEOF, true},
		{"nil", nil, false},
	}
	for _, c := range cases {
		if got := r.retryable(c.err); got != c.want {
			t.Errorf("%s: retryable(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}

// fakePositions is a position store in memory; saves fail with failSave.
type fakePositions struct {
	mu       sync.Mutex
	pos      capture.LSN
	within   capture.Within
	saved    []capture.LSN
	failSave error
}

func (f *fakePositions) Load(context.Context) (Recorded, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return Recorded{End: f.pos, Within: f.within, By: ByRelay}, f.pos != 0, nil
}

func (f *fakePositions) Save(_ context.Context, pos capture.LSN, _ string, ack func(error)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.saved = append(f.saved, pos)
	if f.failSave == nil {
		f.pos = pos
	}
	go ack(f.failSave)
	return nil
}

func (f *fakePositions) Where() string  { return "memory" }
func (f *fakePositions) Forget() string { return "forget it" }

// TestPositionRecordedAndReadPerSession: the confirmed position is saved
// once it moved and again at the stop, and every session (a standby that
// takes over included) opens with the position recorded just before it.
func TestPositionRecordedAndReadPerSession(t *testing.T) {
	first := newFakeStream(50, tx(100, 140, outboxRow("e1", "order"))...)
	first.end = fmt.Errorf("receiving WAL: %w", io.ErrUnexpectedEOF)
	second := newFakeStream(140)
	second.end = capture.ErrEnd
	store := &fakePositions{pos: 0x30}
	opt := testOptions(t, &fakeSource{streams: []*fakeStream{first, second}}, &holdSink{})
	withPositions(&opt, store)
	opt.RecordEvery = 5 * time.Millisecond
	if err := Run(context.Background(), opt); err != nil {
		t.Fatal(err)
	}
	if first.known.Recorded != 0x30 || second.known.Recorded != 140 {
		t.Fatalf("sessions opened with recorded %s and %s; want 0/30 and the first session's 0/8C", first.known.Recorded, second.known.Recorded)
	}
}

// TestPositionSaveFailureStops: a position Kafka refuses for good (no
// WRITE on the offsets topic) stops the relay instead of going on
// unprotected against a lost slot.
func TestPositionSaveFailureStops(t *testing.T) {
	st := newFakeStream(50, tx(100, 140, outboxRow("e1", "order"))...)
	store := &fakePositions{failSave: errors.New("TOPIC_AUTHORIZATION_FAILED")}
	opt := testOptions(t, &fakeSource{streams: []*fakeStream{st}}, &holdSink{})
	withPositions(&opt, store)
	opt.RecordEvery = 5 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() { // the next event after the refusal (a keepalive) ends the session
		time.Sleep(200 * time.Millisecond)
		st.appendEvents(capture.Event{Kind: capture.KindIdle, LSN: 200})
	}()
	err := Run(ctx, opt)
	if err == nil || !strings.Contains(err.Error(), "recording the confirmed position") || ctx.Err() != nil {
		t.Fatalf("Run: %v; want it to stop on the refused position", err)
	}
}
