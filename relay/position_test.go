package relay

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/outboxrelay/outboxrelay/capture"
	"github.com/outboxrelay/outboxrelay/sink"
)

// TestRecordedFrom reads offsets as Debezium 3.7's PostgreSQL connector
// writes them (PostgresOffsetContext.getOffset) with its resume rule.
func TestRecordedFrom(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   sink.Offset
		want Recorded
	}{
		{"outboxrelay's own", sink.Offset{LSN: 0x500, Commit: 0x500, Proc: 0x500, Type: "COMMIT", ByRelay: true, Origin: "7/1"},
			Recorded{End: 0x500, Origin: "7/1", By: ByRelay}},
		{"outboxrelay before lsn_proc", sink.Offset{LSN: 0x500, Commit: 0x500},
			Recorded{End: 0x500, By: ByDebezium}},
		{"Debezium after an insert: the rest of its transaction is to send",
			sink.Offset{LSN: 0x4f0, Proc: 0x4f0, Commit: 0x400, Type: "INSERT", Xid: 812},
			Recorded{End: 0x400, Within: capture.Within{Xid: 812, LSN: 0x4f0, Count: 1}, By: ByDebezium}},
		{"Debezium within one multi-insert record", sink.Offset{LSN: 0x4f0, Proc: 0x4f0, Commit: 0x400, Type: "INSERT", Xid: 812, Events: 3},
			Recorded{End: 0x400, Within: capture.Within{Xid: 812, LSN: 0x4f0, Count: 3}, By: ByDebezium}},
		{"Debezium after an update the EventRouter dropped", sink.Offset{LSN: 0x4f0, Proc: 0x4f0, Commit: 0x400, Type: "UPDATE", Xid: 9},
			Recorded{End: 0x400, Within: capture.Within{Xid: 9, LSN: 0x4f0, Count: 1}, By: ByDebezium}},
		{"Debezium after a transactional message", sink.Offset{LSN: 0x4f0, Proc: 0x4f0, Commit: 0x400, Type: "MESSAGE", Xid: 9},
			Recorded{End: 0x400, Within: capture.Within{Xid: 9, LSN: 0x4f0, Count: 1}, By: ByDebezium}},
		{"Debezium after a non-transactional message (no txId): it is done", sink.Offset{LSN: 0x4f0, Proc: 0x4f0, Commit: 0x4f0, Type: "MESSAGE"},
			Recorded{End: 0x4f1, By: ByDebezium}},
		// Regression (issue 25; the cause of debezium/dbz#2004): Debezium
		// records lsn_commit = lsn_proc after a transactional message too
		// (it calls commitMessage for it); taken for a non-transactional
		// one, the rest of its transaction was sent again whole, the
		// message included.
		{"Debezium after a transactional message", sink.Offset{LSN: 0x4f0, Proc: 0x4f0, Commit: 0x4f0, Type: "MESSAGE", Xid: 9},
			Recorded{End: 0x4f0, Within: capture.Within{Xid: 9, LSN: 0x4f0, Count: 1}, By: ByDebezium}},
		{"Debezium's heartbeat after a commit", sink.Offset{LSN: 0x520, Proc: 0x520, Commit: 0x520, Type: "COMMIT", Xid: 812},
			Recorded{End: 0x520, By: ByDebezium}},
		{"Debezium after a BEGIN: nothing of the transaction", sink.Offset{LSN: 0x410, Proc: 0x410, Commit: 0x400, Type: "BEGIN", Xid: 813},
			Recorded{End: 0x400, By: ByDebezium}},
		{"lsn_commit absent: lsn_proc (Debezium's Loader)", sink.Offset{LSN: 0x4f0, Proc: 0x480},
			Recorded{End: 0x480, By: ByDebezium}},
		{"a row without txId: the whole transaction again", sink.Offset{LSN: 0x4f0, Proc: 0x4f0, Commit: 0x400, Type: "INSERT"},
			Recorded{End: 0x400, By: ByDebezium}},
	} {
		if got := recordedFrom(tc.in); got != tc.want {
			t.Errorf("%s: recordedFrom(%+v) = %+v, want %+v", tc.name, tc.in, got, tc.want)
		}
	}
}

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
		opt.Positions = debeziumStore{store}
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
	opt.Positions = debeziumStore{&fakePositions{pos: 0x200, within: capture.Within{Xid: 812, LSN: 0x130, Count: 1}}}
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
	opt.Positions, opt.RecordEvery = debeziumStore{store}, time.Millisecond
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
