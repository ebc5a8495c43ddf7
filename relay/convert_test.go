package relay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/outboxrelay/outboxrelay/capture"
	"github.com/outboxrelay/outboxrelay/internal/terminal"
	"github.com/outboxrelay/outboxrelay/router"
)

// routedValue is what the test router writes for outboxRow's payload.
const routedValue = `"{\"x\":1}"`

// fakeConverter prefixes values with "conv:" into a buffer reused at each
// call (the converter's memory contract); fail decides each call's error.
type fakeConverter struct {
	mu    sync.Mutex
	buf   []byte
	calls map[string]int // per event id
	fail  func(rec *router.Record, call int) error
}

func (c *fakeConverter) Convert(_ context.Context, rec *router.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.calls == nil {
		c.calls = map[string]int{}
	}
	c.calls[rec.EventID]++
	if c.fail != nil {
		if err := c.fail(rec, c.calls[rec.EventID]); err != nil {
			return err
		}
	}
	c.buf = append(append(c.buf[:0], "conv:"...), rec.Value...)
	rec.Value = c.buf
	return nil
}

func (c *fakeConverter) callsOf(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[id]
}

// copySink keeps a copy of every record's value, as the real sinks copy
// in Send, and acks at once.
type copySink struct {
	async  sync.WaitGroup
	mu     sync.Mutex
	values map[string][]byte
	topics []string
}

func (s *copySink) Send(_ context.Context, r *router.Record, ack func(error)) error {
	s.mu.Lock()
	if s.values == nil {
		s.values = map[string][]byte{}
	}
	s.values[r.EventID] = bytes.Clone(r.Value)
	s.topics = append(s.topics, r.Topic)
	s.mu.Unlock()
	s.async.Add(1)
	go func() {
		defer s.async.Done()
		ack(nil)
	}()
	return nil
}

func (s *copySink) Flush(context.Context) error {
	s.async.Wait()
	return nil
}

func (s *copySink) value(id string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.values[id]
}

func TestConvertedRecordsReachTheDelivery(t *testing.T) {
	st := newFakeStream(50, tx(100, 140, outboxRow("e1", "order"), outboxRow("e2", "order"))...)
	sink := &copySink{}
	opt := testOptions(t, &fakeSource{streams: []*fakeStream{st}}, sink)
	opt.Convert = &fakeConverter{}
	stop := runAsync(t, opt)
	waitUntil(t, "the transaction confirmed", func() bool { return st.confirmed() == 140 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"e1", "e2"} {
		if got := string(sink.value(id)); got != "conv:"+routedValue {
			t.Errorf("%s: the delivery got %q, want the converted value", id, got)
		}
	}
}

// The registry down: the record is retried with backoff, the server kept
// informed, nothing after it sent and the position not moved, until the
// converter answers again.
func TestConverterUnavailableIsRetriedHoldingThePosition(t *testing.T) {
	evs := append(tx(100, 140, outboxRow("e1", "order")), tx(200, 240, outboxRow("e2", "order"), outboxRow("e3", "order"))...)
	st := newFakeStream(50, evs...)
	sink := &copySink{}
	outage := true
	conv := &fakeConverter{fail: func(rec *router.Record, call int) error {
		if rec.EventID == "e2" && outage {
			return fmt.Errorf("registering: %w: HTTP 503", ErrConverterUnavailable)
		}
		return nil
	}}
	opt := testOptions(t, &fakeSource{streams: []*fakeStream{st}}, sink)
	opt.Convert = conv
	stop := runAsync(t, opt)
	waitUntil(t, "the first transaction confirmed", func() bool { return st.confirmed() == 140 })
	time.Sleep(1500 * time.Millisecond) // backoff 100, 200, 400, 800 ms
	if n := conv.callsOf("e2"); n < 4 || n > 6 {
		t.Errorf("e2 converted %d times in 1.5 s; want 4 to 6 (backoff from 100 ms, doubling)", n)
	}
	if st.keepAlives.Load() < 4 {
		t.Errorf("%d keepalives during the outage; want one per wait at least", st.keepAlives.Load())
	}
	if got := st.confirmed(); got != 140 {
		t.Errorf("confirmed %s during the outage; want 0/8C", got)
	}
	if sink.value("e2") != nil || sink.value("e3") != nil {
		t.Error("records sent during the outage")
	}
	conv.mu.Lock()
	outage = false
	conv.mu.Unlock()
	waitUntil(t, "the second transaction confirmed", func() bool { return st.confirmed() == 240 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if got := string(sink.value("e2")); got != "conv:"+routedValue {
		t.Errorf("e2 after the outage: %q", got)
	}
}

// A record the converter refuses is poison: without a policy the relay
// stops having confirmed what came before; with one, the policy gets the
// router's record (not converted) and the converter's stage.
func TestConverterRefusalIsPoison(t *testing.T) {
	script := func() []capture.Event {
		return append(tx(100, 140, outboxRow("e1", "order")), tx(200, 240, outboxRow("e2", "order"))...)
	}
	refuse := func(rec *router.Record, _ int) error {
		if rec.EventID == "e2" {
			return &ConvertError{Stage: "VALUE_CONVERTER", Err: errors.New(`subject "outbox.event.order-value": incompatible (HTTP 409)`)}
		}
		return nil
	}
	st := newFakeStream(50, script()...)
	opt := testOptions(t, &fakeSource{streams: []*fakeStream{st}}, &copySink{})
	opt.Convert = &fakeConverter{fail: refuse}
	err := Run(context.Background(), opt)
	var ce *ConvertError
	if !errors.As(err, &ce) {
		t.Fatalf("Run: %v; want the *ConvertError", err)
	}
	if st.final != 140 {
		t.Errorf("confirmed %s at the stop; want 0/8C", st.final)
	}

	st = newFakeStream(50, script()...)
	opt = testOptions(t, &fakeSource{streams: []*fakeStream{st}}, &copySink{})
	opt.Convert = &fakeConverter{fail: refuse}
	var handed []string
	opt.Poison = func(ctx context.Context, ev *router.Event, rec *router.Record, cause error, ack func(error)) error {
		handed = append(handed, fmt.Sprintf("%s %s %v", rec.EventID, rec.Value, errors.As(cause, &ce)))
		ack(nil)
		return nil
	}
	stop := runAsync(t, opt)
	waitUntil(t, "the poison transaction confirmed", func() bool { return st.confirmed() == 240 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if len(handed) != 1 || handed[0] != "e2 "+routedValue+" true" {
		t.Fatalf("poison policy got %q; want e2's record as the router wrote it, with the ConvertError", handed)
	}
}

// A final converter error (refused credentials) stops the relay: no
// retried session.
func TestConverterFinalErrorStops(t *testing.T) {
	st := newFakeStream(50, tx(100, 140, outboxRow("e1", "order"))...)
	src := &fakeSource{streams: []*fakeStream{st, newFakeStream(50)}}
	opt := testOptions(t, src, &copySink{})
	opt.Convert = &fakeConverter{fail: func(*router.Record, int) error {
		return terminal.Final(errors.New("HTTP 401; check value.converter.basic.auth.user.info"))
	}}
	err := Run(context.Background(), opt)
	if !terminal.IsFinal(err) || src.opened != 1 {
		t.Fatalf("Run: %v after %d sessions; want the final error after one", err, src.opened)
	}
}

// The policy names the converter's stage in the dead-letter headers.
func TestPoisonPolicyStageOfAConverter(t *testing.T) {
	dl := &stageRecorder{}
	p, err := NewPoisonPolicy("all", "c", dl, "dlq", testOptions(t, nil, nil).Log)
	if err != nil {
		t.Fatal(err)
	}
	ev := &router.Event{Row: outboxRow("e1", "order")}
	rec := &router.Record{Topic: "t", EventID: "e1"}
	if err := p(context.Background(), ev, rec, &ConvertError{Stage: "KEY_CONVERTER", Err: errors.New("no")}, func(error) {}); err != nil {
		t.Fatal(err)
	}
	if dl.stage != "KEY_CONVERTER" {
		t.Errorf("stage %q, want KEY_CONVERTER", dl.stage)
	}
}

type stageRecorder struct{ stage string }

func (s *stageRecorder) DeadLetter(_ context.Context, _ *router.Record, _ error, meta DeadLetterMeta, onAck func(error)) error {
	s.stage = meta.Stage
	onAck(nil)
	return nil
}

// Heartbeat records go through the converter too, as Connect converts
// them with the connector's converters.
func TestHeartbeatIsConverted(t *testing.T) {
	st := newFakeStream(50, capture.Event{Kind: capture.KindHeartbeat, CommitTime: time.Unix(1, 0)})
	sink := &copySink{}
	opt := testOptions(t, &fakeSource{streams: []*fakeStream{st}}, sink)
	opt.HeartbeatTopic = "__debezium-heartbeat.p"
	opt.Convert = &fakeConverter{}
	stop := runAsync(t, opt)
	waitUntil(t, "the heartbeat sent", func() bool { return sink.value("") != nil })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if got := sink.value(""); !bytes.HasPrefix(got, []byte("conv:")) {
		t.Errorf("heartbeat value %q, want it converted", got)
	}
}

// The converter stage sits before Delivery.Send, so the exactly-once
// delivery gets converted records too, and an outage holds its
// transaction the same way: nothing sent, nothing committed, until the
// converter answers.
func TestConverterWithExactlyOnce(t *testing.T) {
	st := newFakeStream(50, tx(100, 140, outboxRow("e1", "order"), outboxRow("e2", "order"))...)
	ts := &txnFake{}
	opt := testOptions(t, &fakeSource{streams: []*fakeStream{st}}, nil)
	opt.Delivery = ts
	conv := &fakeConverter{fail: func(rec *router.Record, call int) error {
		if rec.EventID == "e1" && call <= 3 {
			return fmt.Errorf("%w: HTTP 503", ErrConverterUnavailable)
		}
		return nil
	}}
	opt.Convert = conv
	stop := runAsync(t, opt)
	waitUntil(t, "two records sent", func() bool { s, b := ts.state(); return len(s) == 2 && len(b) == 1 })
	if n := conv.callsOf("e1"); n != 4 {
		t.Errorf("e1 converted %d times; want 4 (3 failures, then the answer)", n)
	}
	if got := st.confirmed(); got != 50 {
		t.Errorf("confirmed %s before the Kafka commit; want 0/32", got)
	}
	ts.commit()
	waitUntil(t, "the commit confirmed", func() bool { return st.confirmed() == 140 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}
