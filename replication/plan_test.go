package replication

import (
	"errors"
	"strings"
	"testing"

	"github.com/outboxrelay/outboxrelay/capture"
	"github.com/outboxrelay/outboxrelay/postgres"
)

// TestDecide is the session's decision table: every combination of slot
// state, snapshot marker, snapshot mode and this process's confirmed
// position.
func TestDecide(t *testing.T) {
	exists := Slot{Exists: true, Plugin: "pgoutput", Database: "db", ConfirmedFlush: 0x100}
	active := exists
	active.Active, active.ActivePID = true, 42
	lost := exists
	lost.WALStatus = "lost"
	cases := []struct {
		name      string
		slot      Slot
		pending   bool
		mode      string
		confirmed uint64
		recorded  uint64
		want      Plan
		wantErr   error
	}{
		{"new slot, initial", Slot{}, false, SnapshotInitial, 0, 0, Plan{Action: CreateWithSnapshot}, nil},
		{"new slot, when_needed", Slot{}, false, SnapshotWhenNeeded, 0, 0, Plan{Action: CreateWithSnapshot}, nil},
		{"new slot, no_data", Slot{}, false, SnapshotNoData, 0, 0, Plan{Action: Create}, nil},
		{"new slot, initial_only", Slot{}, false, SnapshotInitialOnly, 0, 0, Plan{Action: CreateWithSnapshot, StopAfterSnapshot: true}, nil},
		{"new slot, stale marker, no_data", Slot{}, true, SnapshotNoData, 0, 0, Plan{Action: Create, DropMarker: true}, nil},
		{"new slot, marker kept for the new snapshot", Slot{}, true, SnapshotInitial, 0, 0, Plan{Action: CreateWithSnapshot}, nil},
		{"slot dropped under this process: refused", Slot{}, false, SnapshotNoData, 0x200, 0, Plan{Action: Refuse}, ErrSlotGone},
		{"slot dropped under this process, initial: refused", Slot{}, false, SnapshotInitial, 0x200, 0, Plan{Action: Refuse}, ErrSlotGone},
		{"slot gone, position recorded: refused", Slot{}, false, SnapshotInitial, 0, 0x300, Plan{Action: Refuse}, ErrSlotGone},
		{"slot gone, position recorded, slot.drop.on.stop: create", Slot{}, false, SnapshotNoData, 0, 0x300, Plan{Action: Create, Forget: true}, nil},
		{"slot gone, position recorded, when_needed: read again", Slot{}, false, SnapshotWhenNeeded, 0, 0x300, Plan{Action: CreateWithSnapshot, Forget: true}, nil},
		{"slot gone under this process, when_needed", Slot{}, true, SnapshotWhenNeeded, 0x200, 0, Plan{Action: CreateWithSnapshot, Forget: true}, nil},
		{"slot behind the recorded position: resume", exists, false, SnapshotInitial, 0, 0x300, Plan{Action: Resume}, nil},
		{"slot ahead of the recorded position: resume", exists, false, SnapshotInitial, 0, 0x80, Plan{Action: Resume}, nil},
		{"resume", exists, false, SnapshotInitial, 0, 0, Plan{Action: Resume}, nil},
		{"resume, no_data", exists, false, SnapshotNoData, 0x80, 0, Plan{Action: Resume}, nil},
		{"snapshot did not finish: redo", exists, true, SnapshotInitial, 0, 0, Plan{Action: RedoSnapshot}, nil},
		{"snapshot did not finish, initial_only: redo then stop", exists, true, SnapshotInitialOnly, 0, 0, Plan{Action: RedoSnapshot, StopAfterSnapshot: true}, nil},
		{"snapshot did not finish, no_data: drop the marker", exists, true, SnapshotNoData, 0, 0, Plan{Action: Resume, DropMarker: true}, nil},
		{"initial_only done before", exists, false, SnapshotInitialOnly, 0, 0, Plan{Action: Done, StopAfterSnapshot: true}, nil},
		{"slot active elsewhere", active, false, SnapshotInitial, 0, 0, Plan{Action: Refuse}, ErrSlotInUse},
		{"slot lost its WAL", lost, false, SnapshotInitial, 0, 0, Plan{Action: Refuse}, ErrSlotIncompat},
		{"slot of another plugin", Slot{Exists: true, Plugin: "wal2json", Database: "db"}, false, SnapshotInitial, 0, 0, Plan{Action: Refuse}, ErrSlotIncompat},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := &Config{Config: postgres.Config{DBName: "db"}, Slot: "s", SnapshotMode: c.mode, DropSlotOnStop: strings.Contains(c.name, "slot.drop.on.stop")}
			got := Decide(c.slot, c.pending, cfg, capture.Known{Confirmed: capture.LSN(c.confirmed), Recorded: capture.LSN(c.recorded)})
			if !errors.Is(got.Err, c.wantErr) || (c.wantErr == nil) != (got.Err == nil) {
				t.Fatalf("Decide: err %v, want %v", got.Err, c.wantErr)
			}
			got.Err = nil
			if got != c.want {
				t.Fatalf("Decide = %+v (%s), want %+v (%s)", got, got.Action, c.want, c.want.Action)
			}
		})
	}
}
