package replication

import (
	"strings"
	"testing"
)

func TestSnapshotMarker(t *testing.T) {
	long := strings.Repeat("a", 63)
	cases := []struct {
		slot, want string
	}{
		{"debezium", "debezium_snapshot_pending"},
		{"public_outbox", "public_outbox_snapshot_pending"},
		{strings.Repeat("s", 46), strings.Repeat("s", 46) + "_snapshot_pending"}, // exactly 63
	}
	for _, c := range cases {
		if got := SnapshotMarker(c.slot); got != c.want {
			t.Errorf("SnapshotMarker(%q) = %q, want %q", c.slot, got, c.want)
		}
	}
	seen := map[string]string{}
	for _, slot := range []string{strings.Repeat("s", 47), long, long[:62] + "b", long[:50] + "_x"} {
		m := SnapshotMarker(slot)
		if len(m) > maxSlotName {
			t.Errorf("SnapshotMarker(%q) = %q: %d bytes, over PostgreSQL's %d", slot, m, len(m), maxSlotName)
		}
		if !strings.HasSuffix(m, markerSuffix) {
			t.Errorf("SnapshotMarker(%q) = %q: no %s suffix", slot, m, markerSuffix)
		}
		if other, ok := seen[m]; ok {
			t.Errorf("slots %q and %q share the marker %q", other, slot, m)
		}
		seen[m] = slot
		if again := SnapshotMarker(slot); again != m {
			t.Errorf("SnapshotMarker(%q) not stable: %q then %q", slot, m, again)
		}
	}
}
