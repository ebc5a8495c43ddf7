package replication

import (
	"fmt"

	"github.com/outboxrelay/outboxrelay/capture"
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
	// Forget: the slot the relay streamed from is gone and is made again
	// (snapshot.mode=when_needed): the tables are read again, and what
	// was confirmed belongs to the old slot.
	Forget bool
	// StopAfterSnapshot: snapshot.mode=initial_only stops once the
	// snapshot is acknowledged.
	StopAfterSnapshot bool
	Err               error // for Refuse
}

// Decide is the session's decision table: given the slot as the server
// reports it, whether its snapshot marker exists, the snapshot mode and
// what the relay knows of its position (what this process confirmed, what
// was recorded in the offsets topic), what to do before streaming.
//
// A slot that is gone while a position is known is never silently made
// again: the events committed since that position would never be
// published. It is refused, unless snapshot.mode=when_needed asks to read
// the outbox tables again (Debezium's meaning: snapshot when the slot
// cannot serve the recorded position), or slot.drop.on.stop says the slot
// goes at every stop (what is committed while the relay is stopped is then
// not streamed, as with Debezium).
func Decide(slot Slot, markerPending bool, cfg *Config, known capture.Known) Plan {
	if err := CheckSlot(slot, cfg); err != nil {
		return Plan{Action: Refuse, Err: err}
	}
	wantSnapshot := cfg.SnapshotMode != SnapshotNoData
	p := Plan{StopAfterSnapshot: cfg.SnapshotMode == SnapshotInitialOnly}
	switch {
	case !slot.Exists && known.Last() != 0 && cfg.SnapshotMode != SnapshotWhenNeeded && !cfg.DropSlotOnStop:
		return Plan{Action: Refuse, Err: slotGone(cfg, known)}
	case !slot.Exists:
		p.Forget = known.Last() != 0
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

// slotGone is the refusal of a missing slot whose position is known.
func slotGone(cfg *Config, known capture.Known) error {
	where := "confirmed by this process"
	if known.Recorded >= known.Confirmed {
		where = "recorded in " + known.RecordedIn
		if known.RecordedBy != "" {
			where = "recorded by " + known.RecordedBy + " in " + known.RecordedIn
		}
	}
	return fmt.Errorf("%w: replication slot %q does not exist, but this connector delivered every event up to %s (%s): "+
		"the slot was dropped, or lost in a failover to a server it was not synchronized to, and events committed after that would never be published. "+
		"Restore the slot (on PostgreSQL 17+ with slot.failover=true it survives a failover to a standby with sync_replication_slots = on), "+
		"or set snapshot.mode=when_needed to read the outbox tables again and then stream (rows still in the table are sent again; rows deleted since are not), "+
		"or, accepting that the events in between are lost, delete the recorded position (%s)",
		ErrSlotGone, cfg.Slot, known.Last(), where, known.Forget)
}
