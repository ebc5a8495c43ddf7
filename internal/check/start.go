package check

import (
	"context"
	"fmt"
	"strings"

	"github.com/outboxrelay/outboxrelay/capture"
	"github.com/outboxrelay/outboxrelay/internal/setup"
	"github.com/outboxrelay/outboxrelay/replication"
)

// startState is what the slot check learned, for the start prediction.
type startState struct {
	read        bool // the slot was inspected
	slot        replication.Slot
	relayActive bool // another outboxrelay streams it
}

// start predicts what `run` does first: the slot as the server reports it
// and the position recorded in the offsets topic (Debezium's or
// outboxrelay's) go through the decision `run` makes (replication.Decide),
// so that the check fails exactly when `run` would refuse to start, and
// otherwise says where it resumes and what it skips.
func (c *checker) start(ctx context.Context, set *setup.Setup) {
	const name = "start"
	if !c.st.read {
		return
	}
	store := set.AtLeastOnce(c.prod)
	rec, found, err := store.Peek(ctx)
	if err != nil {
		c.fail(name, err.Error(), "")
		return
	}
	known := capture.Known{RecordedIn: store.Where(), Forget: store.Forget()}
	if found {
		known.Recorded, known.Within, known.RecordedBy, known.RecordedOrigin = rec.End, rec.Within, rec.By, rec.Origin
	}
	var pending bool
	if err := c.conn.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_replication_slots WHERE slot_name = $1)`, replication.SnapshotMarker(c.pg.Slot)).Scan(&pending); err != nil {
		c.fail(name, "reading the snapshot marker slot: "+err.Error(), "")
		return
	}
	// An active slot is the slot check's: another outboxrelay's means this
	// instance stands by (predicted as if it let go), anything else's is
	// failed there, with the fix, as run waits for it and then refuses.
	slot, standby := c.st.slot, ""
	if slot.Active {
		if !c.st.relayActive {
			return
		}
		slot.Active, standby = false, "another outboxrelay streams the slot: this instance stands by; when it takes over: "
	}
	plan := replication.Decide(slot, pending, c.pg, known)
	if plan.Action == replication.Refuse {
		c.fail(name, "run would refuse to start: "+strings.TrimPrefix(plan.Err.Error(), "preflight: "), "")
		return
	}
	c.pass(name, standby+describeStart(plan, slot, c.pg, known, found))
}

// describeStart says what run does with plan, in the check's words.
func describeStart(plan replication.Plan, slot replication.Slot, cfg *replication.Config, known capture.Known, found bool) string {
	recorded := "no position recorded in " + known.RecordedIn
	if found {
		recorded = fmt.Sprintf("recorded position %s, written by %s, in %s", known.Recorded, known.RecordedBy, known.RecordedIn)
	}
	switch plan.Action {
	case replication.Create:
		return fmt.Sprintf("the relay creates slot %s and streams from its consistent point (snapshot.mode=%s); %s", cfg.Slot, cfg.SnapshotMode, recorded)
	case replication.CreateWithSnapshot:
		return fmt.Sprintf("the relay creates slot %s and reads the outbox tables first (snapshot.mode=%s); %s", cfg.Slot, cfg.SnapshotMode, recorded)
	case replication.RedoSnapshot:
		return fmt.Sprintf("the initial snapshot did not finish: the relay reads the outbox tables again, then resumes at %s; %s", slot.ConfirmedFlush, recorded)
	case replication.Done:
		return fmt.Sprintf("snapshot.mode=%s and its snapshot is done: nothing to stream", cfg.SnapshotMode)
	}
	return fmt.Sprintf("resume at %s (slot %s confirmed_flush_lsn); %s; %s", slot.ConfirmedFlush, cfg.Slot, recorded, skipped(slot.ConfirmedFlush, known))
}

// skipped says what a resume from the slot at from skips: the WAL between
// the slot and the recorded end (transactions in Kafka already), and the
// events of the transaction Debezium stopped inside, which the slot sends
// again.
func skipped(from capture.LSN, known capture.Known) string {
	var parts []string
	if known.Recorded > from {
		parts = append(parts, fmt.Sprintf("skip %d bytes of WAL already published (transactions committed before %s)", uint64(known.Recorded-from), known.Recorded))
	}
	if w := known.Within; w.Count > 0 {
		parts = append(parts, fmt.Sprintf("skip the events of transaction %d up to %s (the first %d there) that %s published, when the slot sends it again", w.Xid, w.LSN, w.Count, known.RecordedBy))
	}
	if len(parts) == 0 {
		return "nothing to skip"
	}
	return strings.Join(parts, "; ") + " (unless the slot is on another server or timeline than the position)"
}
