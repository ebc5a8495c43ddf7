package sink

import (
	"testing"

	"github.com/outboxrelay/outboxrelay/capture"
	"github.com/outboxrelay/outboxrelay/relay"
)

// TestRecordedFrom reads offsets as Debezium 3.7's PostgreSQL connector
// writes them (PostgresOffsetContext.getOffset) with its resume rule.
func TestRecordedFrom(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Offset
		want relay.Recorded
	}{
		{"outboxrelay's own", Offset{LSN: 0x500, Commit: 0x500, Proc: 0x500, Type: "COMMIT", ByRelay: true, Origin: "7/1"},
			relay.Recorded{End: 0x500, Origin: "7/1", By: relay.ByRelay}},
		{"outboxrelay before lsn_proc", Offset{LSN: 0x500, Commit: 0x500},
			relay.Recorded{End: 0x500, By: relay.ByDebezium}},
		{"Debezium after an insert: the rest of its transaction is to send",
			Offset{LSN: 0x4f0, Proc: 0x4f0, Commit: 0x400, Type: "INSERT", Xid: 812},
			relay.Recorded{End: 0x400, Within: capture.Within{Xid: 812, LSN: 0x4f0, Count: 1}, By: relay.ByDebezium}},
		{"Debezium within one multi-insert record", Offset{LSN: 0x4f0, Proc: 0x4f0, Commit: 0x400, Type: "INSERT", Xid: 812, Events: 3},
			relay.Recorded{End: 0x400, Within: capture.Within{Xid: 812, LSN: 0x4f0, Count: 3}, By: relay.ByDebezium}},
		{"Debezium after an update the EventRouter dropped", Offset{LSN: 0x4f0, Proc: 0x4f0, Commit: 0x400, Type: "UPDATE", Xid: 9},
			relay.Recorded{End: 0x400, Within: capture.Within{Xid: 9, LSN: 0x4f0, Count: 1}, By: relay.ByDebezium}},
		{"Debezium after a transactional message", Offset{LSN: 0x4f0, Proc: 0x4f0, Commit: 0x400, Type: "MESSAGE", Xid: 9},
			relay.Recorded{End: 0x400, Within: capture.Within{Xid: 9, LSN: 0x4f0, Count: 1}, By: relay.ByDebezium}},
		{"Debezium after a non-transactional message (no txId): it is done", Offset{LSN: 0x4f0, Proc: 0x4f0, Commit: 0x4f0, Type: "MESSAGE"},
			relay.Recorded{End: 0x4f1, By: relay.ByDebezium}},
		// Regression (issue 25; the cause of debezium/dbz#2004): Debezium
		// records lsn_commit = lsn_proc after a transactional message too
		// (it calls commitMessage for it); taken for a non-transactional
		// one, the rest of its transaction was sent again whole, the
		// message included.
		{"Debezium after a transactional message", Offset{LSN: 0x4f0, Proc: 0x4f0, Commit: 0x4f0, Type: "MESSAGE", Xid: 9},
			relay.Recorded{End: 0x4f0, Within: capture.Within{Xid: 9, LSN: 0x4f0, Count: 1}, By: relay.ByDebezium}},
		{"Debezium's heartbeat after a commit", Offset{LSN: 0x520, Proc: 0x520, Commit: 0x520, Type: "COMMIT", Xid: 812},
			relay.Recorded{End: 0x520, By: relay.ByDebezium}},
		{"Debezium after a BEGIN: nothing of the transaction", Offset{LSN: 0x410, Proc: 0x410, Commit: 0x400, Type: "BEGIN", Xid: 813},
			relay.Recorded{End: 0x400, By: relay.ByDebezium}},
		{"lsn_commit absent: lsn_proc (Debezium's Loader)", Offset{LSN: 0x4f0, Proc: 0x480},
			relay.Recorded{End: 0x480, By: relay.ByDebezium}},
		{"a row without txId: the whole transaction again", Offset{LSN: 0x4f0, Proc: 0x4f0, Commit: 0x400, Type: "INSERT"},
			relay.Recorded{End: 0x400, By: relay.ByDebezium}},
	} {
		if got := recordedFrom(tc.in); got != tc.want {
			t.Errorf("%s: recordedFrom(%+v) = %+v, want %+v", tc.name, tc.in, got, tc.want)
		}
	}
}
