package sink

import (
	"cmp"
	"errors"
	"fmt"
	"math"

	"github.com/outboxrelay/outboxrelay/capture"
	"github.com/outboxrelay/outboxrelay/internal/terminal"
	"github.com/outboxrelay/outboxrelay/relay"
)

// ErrDebeziumSnapshot: the recorded position is Debezium's, written during
// an initial snapshot that did not finish; nothing says which rows it
// sent. It is final: the relay stops.
var ErrDebeziumSnapshot = terminal.Final(errors.New("the recorded position is an unfinished Debezium snapshot"))

// Recorded interprets what Load or Read (or the exactly-once sink's
// Start) returned; a Debezium snapshot that did not finish is refused
// (nothing says which rows of it reached Kafka).
func (o *Offsets) Recorded(pos Offset, found bool, err error) (relay.Recorded, bool, error) {
	if err != nil || !found {
		return relay.Recorded{}, false, err
	}
	if pos.InSnapshot {
		return relay.Recorded{}, false, fmt.Errorf("%w: its record under key %s in %s was written during an initial snapshot that did not finish (lsn %s): "+
			"start the Debezium connector again until its snapshot is done (its log says \"Snapshot completed\"), or delete the record "+
			"(a record with that key and a null value) to let outboxrelay start by its own snapshot.mode",
			ErrDebeziumSnapshot, o.Key(), o.Topic(), pos.LSN)
	}
	return recordedFrom(pos), true, nil
}

// recordedFrom reads a recorded offset with Debezium's own resume rule
// (PostgresOffsetContext.Loader, PostgresStreamingChangeEventSource and
// WalPositionLocator in Debezium 3.7): lsn_commit is the end of the last
// transaction it completed (lsn_proc when absent); a messageType of a
// row or a transactional message means lsn_proc is the last event it
// processed inside the next transaction (txId), the lsn_events_processed-th
// at that LSN; a non-transactional message (no txId: PgOutputMessageDecoder
// clears it) was processed whole. A transactional message has lsn_commit =
// lsn_proc too (Debezium's commitMessage runs for it), which Debezium's own
// locator takes for a non-transactional one (debezium/dbz#2004). A
// message's LSN is the end of its WAL record (pgoutput sends endptr), which
// may be the LSN of the next row: the count at that LSN tells them apart
// (debezium/dbz#2058). outboxrelay writes lsn = lsn_proc = lsn_commit and
// COMMIT: a position between transactions.
func recordedFrom(o Offset) relay.Recorded {
	r := relay.Recorded{Origin: o.Origin, By: relay.ByDebezium}
	if o.ByRelay {
		r.By = relay.ByRelay
	}
	proc := cmp.Or(o.Proc, o.LSN)
	r.End = cmp.Or(o.Commit, proc)
	switch o.Type {
	case "MESSAGE":
		if o.Xid == 0 { // non-transactional (Debezium records no txId): its own "transaction" at proc
			r.End = max(r.End, proc+1)
			break
		}
		fallthrough
	case "INSERT", "UPDATE", "DELETE", "TRUNCATE":
		if o.Xid > 0 && o.Xid <= math.MaxUint32 {
			r.Within = capture.Within{Xid: uint32(o.Xid), LSN: proc, Count: max(o.Events, 1)}
		}
	}
	return r
}
