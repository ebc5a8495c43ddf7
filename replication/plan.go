package replication

import (
	"github.com/jackc/pglogrepl"
)

// Action is what a session does with the slot before it streams.
type Action int

const (
	// Resume streams from the slot's confirmed position.
	Resume Action = iota + 1
	// Create creates the slot and streams from its consistent point.
	Create
	// CreateWithSnapshot marks the snapshot pending, creates the slot
	// exporting its snapshot, reads the outbox tables in it, and streams
	// from the consistent point once Kafka acknowledged every row.
	CreateWithSnapshot
	// RedoSnapshot reads the outbox tables again in a new snapshot (the
	// first one did not finish), then streams from the slot's position,
	// which has not moved since the slot was created.
	RedoSnapshot
	// Done: snapshot.mode=initial_only and the snapshot was done before;
	// there is nothing to stream.
	Done
	// Refuse: the slot cannot be used; Plan.Err says why and what to do.
	Refuse
)

var actionNames = map[Action]string{Resume: "resume", Create: "create", CreateWithSnapshot: "create+snapshot",
	RedoSnapshot: "redo snapshot", Done: "done", Refuse: "refuse"}

func (a Action) String() string { return actionNames[a] }

// Plan is a session's decision about the slot, made by Decide from what the
// server reported. Sessions carry it out; nothing in it is I/O.
type Plan struct {
	Action Action
	// DropMarker: drop the snapshot marker before anything else (a
	// snapshot left pending that snapshot.mode=no_data will not redo).
	DropMarker bool
	// Forget: the slot this process streamed from is gone and is made
	// again; what the process confirmed belongs to the old slot.
	Forget bool
	// StopAfterSnapshot: snapshot.mode=initial_only stops once the
	// snapshot is acknowledged.
	StopAfterSnapshot bool
	Err               error // for Refuse
}

// Decide is the session's decision table: given the slot as the server
// reports it, whether its snapshot marker exists, the snapshot mode and
// the position this process last confirmed (zero in a new process), what
// to do before streaming.
func Decide(slot Slot, markerPending bool, cfg *Config, confirmed pglogrepl.LSN) Plan {
	if err := CheckSlot(slot, cfg); err != nil {
		return Plan{Action: Refuse, Err: err}
	}
	wantSnapshot := cfg.SnapshotMode != SnapshotNoData
	p := Plan{StopAfterSnapshot: cfg.SnapshotMode == SnapshotInitialOnly}
	switch {
	case !slot.Exists:
		p.Forget = confirmed != 0
		p.DropMarker = markerPending && !wantSnapshot
		p.Action = Create
		if wantSnapshot {
			p.Action = CreateWithSnapshot
		}
	case markerPending && wantSnapshot:
		p.Action = RedoSnapshot
	case markerPending:
		p.DropMarker = true
		p.Action = Resume
	default:
		p.Action = Resume
	}
	if p.StopAfterSnapshot && p.Action == Resume {
		p.Action = Done
	}
	return p
}

// snapshots reports whether the plan reads the outbox tables.
func (p Plan) snapshots() bool { return p.Action == CreateWithSnapshot || p.Action == RedoSnapshot }
