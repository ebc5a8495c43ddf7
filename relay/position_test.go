package relay

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/outboxrelay/outboxrelay/capture"
)

// debeziumTx is a streamed transaction with its id and a row per LSN.
func debeziumTx(xid uint32, begin, end capture.LSN, rows map[capture.LSN][]string) []capture.Event {
	evs := []capture.Event{{Kind: capture.KindBegin, LSN: begin, Xid: xid, CommitTime: time.Unix(1, 0)}}
	lsns := make([]capture.LSN, 0, len(rows))
	for lsn := range rows {
		lsns = append(lsns, lsn)
	}
	slices.Sort(lsns)
	for _, lsn := range lsns {
		for _, id := range rows[lsn] {
			evs = append(evs, capture.Event{Kind: capture.KindRow, LSN: lsn, Row: outboxRow(id, "order")})
		}
	}
	return append(evs, capture.Event{Kind: capture.KindCommit, LSN: begin, EndLSN: end})
}

// TestResumeFromDebeziumPosition: outboxrelay started on the slot and
// offsets of a Debezium connector that stopped after the second event of
// a transaction. The slot (flushed to the previous commit) streams that
// transaction and an earlier one again: what Debezium's position covers is
// not sent again, the rest is, once; a transaction of another id at the
// same place is sent whole.
func TestResumeFromDebeziumPosition(t *testing.T) {
	for _, tc := range []struct {
		name   string
		within capture.Within
		want   []string
	}{
		{"after e3", capture.Within{Xid: 812, LSN: 0x130, Count: 1}, []string{"e4", "e5", "e6"}},
		{"within the multi-row record", capture.Within{Xid: 812, LSN: 0x140, Count: 1}, []string{"e5", "e6"}},
		{"after the multi-row record", capture.Within{Xid: 812, LSN: 0x140, Count: 2}, []string{"e6"}},
		{"another transaction's id", capture.Within{Xid: 999, LSN: 0x130, Count: 1}, []string{"e2", "e3", "e4", "e5", "e6"}},
	} {
		evs := debeziumTx(811, 0x90, 0xa0, map[capture.LSN][]string{0x80: {"e1"}})
		evs = append(evs, debeziumTx(812, 0x150, 0x160, map[capture.LSN][]string{0x120: {"e2"}, 0x130: {"e3"}, 0x140: {"e4", "e5"}})...)
		evs = append(evs, debeziumTx(813, 0x170, 0x180, map[capture.LSN][]string{0x165: {"e6"}})...)
		st := newFakeStream(0x50, evs...)
		st.end = capture.ErrEnd
		store := &fakePositions{pos: 0xa0, within: tc.within}
		sk := &holdSink{}
		opt := testOptions(t, &fakeSource{streams: []*fakeStream{st}}, sk)
		withPositions(&opt, debeziumStore{store})
		if err := Run(context.Background(), opt); err != nil {
			t.Fatal(err)
		}
		if sent := sk.sentIDs(); !slices.Equal(sent, tc.want) {
			t.Errorf("%s: sent %v, want %v", tc.name, sent, tc.want)
		}
	}
}

// TestResumeFromDebeziumSkipsNothingOnACreatedSlot: a Debezium position
// has no origin; on a slot created anew its LSNs say nothing about what
// the new slot streams, so nothing is skipped.
func TestResumeFromDebeziumSkipsNothingOnACreatedSlot(t *testing.T) {
	st := newFakeStream(0x50, debeziumTx(812, 0x150, 0x160, map[capture.LSN][]string{0x120: {"e2"}, 0x130: {"e3"}})...)
	st.end, st.created = capture.ErrEnd, true
	sk := &holdSink{}
	opt := testOptions(t, &fakeSource{streams: []*fakeStream{st}}, sk)
	withPositions(&opt, debeziumStore{&fakePositions{pos: 0x200, within: capture.Within{Xid: 812, LSN: 0x130, Count: 1}}})
	if err := Run(context.Background(), opt); err != nil {
		t.Fatal(err)
	}
	if sent := sk.sentIDs(); !slices.Equal(sent, []string{"e2", "e3"}) {
		t.Errorf("sent %v, want e2 and e3", sent)
	}
}

// debeziumStore is fakePositions whose position Debezium recorded.
type debeziumStore struct{ *fakePositions }

func (d debeziumStore) Load(ctx context.Context) (Recorded, bool, error) {
	r, found, err := d.fakePositions.Load(ctx)
	r.By = ByDebezium
	return r, found, err
}

// sentIDs lists the event ids sent, in order.
func (s *holdSink) sentIDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.sent)
}

// Regression (review of issue 25): the recorder's first save after a
// cut-over wrote the checkpoint's position as soon as it moved, below the
// position Debezium had recorded while the session was still skipping up
// to it: a stop then (or a crash) left a position that sends Debezium's
// events again, and lost the point inside its last transaction.
func TestRecorderNeverGoesBehindTheRecordedPosition(t *testing.T) {
	st := newFakeStream(0x50, debeziumTx(811, 0x90, 0xa0, map[capture.LSN][]string{0x80: {"e1"}})...)
	st.end = capture.ErrEnd
	store := &fakePositions{pos: 0x200, within: capture.Within{Xid: 812, LSN: 0x1f0, Count: 1}}
	sk := &holdSink{}
	opt := testOptions(t, &fakeSource{streams: []*fakeStream{st}}, sk)
	withPositions(&opt, debeziumStore{store})
	opt.RecordEvery = time.Millisecond
	if err := Run(context.Background(), opt); err != nil {
		t.Fatal(err)
	}
	store.mu.Lock()
	defer store.mu.Unlock()
	for _, pos := range store.saved {
		if pos < 0x200 {
			t.Errorf("saved %s, below the recorded 0/200; saves %v", pos, store.saved)
		}
	}
	if sent := sk.sentIDs(); len(sent) != 0 {
		t.Errorf("sent %v; want nothing (below the recorded position)", sent)
	}
}
