package check

import (
	"strings"
	"testing"

	"github.com/outboxrelay/outboxrelay/capture"
	"github.com/outboxrelay/outboxrelay/replication"
)

// TestDescribeStart: what check prints for each start run would make.
func TestDescribeStart(t *testing.T) {
	cfg := &replication.Config{Slot: "outbox_slot", SnapshotMode: replication.SnapshotNoData}
	in := "offsets topic connect-offsets"
	for _, tc := range []struct {
		name  string
		plan  replication.Action
		slot  replication.Slot
		known capture.Known
		found bool
		want  []string
	}{
		{"resume, nothing recorded", replication.Resume, replication.Slot{Exists: true, ConfirmedFlush: 0x500}, capture.Known{RecordedIn: in}, false,
			[]string{"resume at 0/500", "no position recorded in offsets topic connect-offsets", "nothing to skip"}},
		{"resume behind Debezium's position", replication.Resume, replication.Slot{Exists: true, ConfirmedFlush: 0x500},
			capture.Known{Recorded: 0x700, RecordedBy: "Debezium", RecordedIn: in}, true,
			[]string{"resume at 0/500", "recorded position 0/700, written by Debezium", "skip 512 bytes of WAL already published"}},
		{"resume inside Debezium's last transaction", replication.Resume, replication.Slot{Exists: true, ConfirmedFlush: 0x700},
			capture.Known{Recorded: 0x700, Within: capture.Within{Xid: 42, LSN: 0x700, Count: 1}, RecordedBy: "Debezium", RecordedIn: in}, true,
			[]string{"resume at 0/700", "skip the events of transaction 42 up to 0/700 (the first 1 there) that Debezium published"}},
		{"the slot ahead", replication.Resume, replication.Slot{Exists: true, ConfirmedFlush: 0x900},
			capture.Known{Recorded: 0x700, RecordedBy: "outboxrelay", RecordedIn: in}, true,
			[]string{"resume at 0/900", "written by outboxrelay", "nothing to skip"}},
		{"create", replication.Create, replication.Slot{}, capture.Known{RecordedIn: in}, false,
			[]string{"creates slot outbox_slot", "snapshot.mode=no_data"}},
	} {
		got := describeStart(replication.Plan{Action: tc.plan}, tc.slot, cfg, tc.known, tc.found)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", tc.name, got, w)
			}
		}
	}
}
