// Package capture is the seam between a capture source (PostgreSQL's
// logical replication, or polling) and the relay: what a source yields,
// and what it needs to know back.
//
// A source yields the committed transactions of the outbox tables in commit
// order, as a stream of Events from one goroutine: Begin, the transaction's
// Rows, Commit. Between transactions it may yield Idle, a position up to
// which nothing concerns the outbox. The relay routes and publishes the
// rows and keeps a Progress that the source reads to learn how far it may
// confirm (invariant 1 of DESIGN.md).
//
// Positions are the package's own type, LSN (a WAL location, or poll
// mode's batch number); State is what sources and relay report to their
// observers; Source.Holds and Stream.Origin tell the relay whether this
// instance still holds the failover lock and which server and timeline a
// stream's positions belong to.
//
// The package imports no other package of the project and no PostgreSQL
// library, so that sources depend neither on the router nor on the sink.
package capture

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// LSN is a position in a source's log, in commit order: a WAL location
// for logical replication, a batch number for poll mode. It prints as
// PostgreSQL writes an LSN ("16/B374D848"), for both.
type LSN uint64

// String is the position as PostgreSQL writes an LSN.
func (l LSN) String() string { return fmt.Sprintf("%X/%X", uint32(l>>32), uint32(l)) }

// ParseLSN reads a position written as PostgreSQL writes an LSN.
func ParseLSN(s string) (LSN, error) {
	var hi, lo uint32
	if n, err := fmt.Sscanf(s, "%X/%X", &hi, &lo); err != nil || n != 2 {
		return 0, fmt.Errorf("parsing LSN %q: want two hexadecimal numbers separated by a slash, like 16/B374D848", s)
	}
	return LSN(uint64(hi)<<32 | uint64(lo)), nil
}

// Op is what happened to a row, as Debezium names it.
type Op byte

const (
	OpCreate Op = 'c' // INSERT
	OpUpdate Op = 'u' // UPDATE
	OpDelete Op = 'd' // DELETE
	OpRead   Op = 'r' // a row read by the initial snapshot
	// OpMessage is a logical decoding message (pg_logical_emit_message):
	// Row.Prefix and Row.Content are set, Table and Columns are empty. A
	// transactional one is a row of its transaction; a non-transactional
	// one comes in a transaction of its own (see KindBegin).
	OpMessage Op = 'm'
)

// String is the operation's letter ("c"), as Debezium writes it and logs
// show it.
func (o Op) String() string { return string(rune(o)) }

// Column is one value of a row in PostgreSQL's text format, as pgoutput
// sends it and as the snapshot reads it. The router reads it as is.
type Column struct {
	Name string
	OID  uint32 // the column's type (pg_type.oid)
	Text []byte // aliases the source's buffers: valid until the next Next; empty when Null
	Null bool
	// Unchanged: an unchanged TOASTed value the server did not send
	// (updates only).
	Unchanged bool
	// Nullable: the column accepts NULL (pg_attribute.attnotnull is
	// false). pgoutput does not send it; the zero value means NOT NULL.
	Nullable bool
}

// Row is one row of an outbox table.
type Row struct {
	Op    Op
	Table string // "schema.table"
	// Columns is the new tuple; for a delete, the old (key) tuple.
	Columns []Column
	// OldKey holds the old key columns of an UPDATE that carried them;
	// KeyChanged says whether the key changed.
	OldKey     []Column
	KeyChanged bool
	// Position counts the rows of the transaction from 1, in the order
	// the source yields them.
	Position int
	// Prefix and Content are a message's (OpMessage); Content aliases the
	// source's buffers, valid until the next Next.
	Prefix  string
	Content []byte
}

// Kind tells what an Event is.
type Kind uint8

const (
	// KindBegin opens a transaction that commits at LSN, at CommitTime
	// (zero for the initial snapshot's pseudo-transaction). A
	// non-transactional logical decoding message comes alone in a
	// transaction of its own, whose LSN and EndLSN are the message's LSN
	// and whose CommitTime is when the source received it.
	KindBegin Kind = iota + 1
	// KindRow is one row of the open transaction.
	KindRow
	// KindCommit closes the open transaction: LSN is the commit LSN,
	// EndLSN the end of the commit record, the position that confirms it.
	KindCommit
	// KindIdle is yielded between transactions only: everything up to LSN
	// has been yielded or does not concern the outbox.
	KindIdle
	// KindHeartbeat: heartbeat.interval.ms passed (the source ran
	// heartbeat.action.query); the relay emits a heartbeat record. It
	// belongs to no transaction.
	KindHeartbeat
	// KindSnapshotDone follows the initial snapshot's Commit: the relay
	// makes sure Kafka acknowledged every snapshot row, then calls
	// Stream.SnapshotDone before asking for the next event.
	KindSnapshotDone
)

// Event is one step of a stream. It and its Row are reused by the next
// call to Next.
type Event struct {
	Kind       Kind
	LSN        LSN
	EndLSN     LSN       // KindCommit
	CommitTime time.Time // KindBegin; KindHeartbeat: when it ran
	// Snapshot marks KindBegin of the initial snapshot's pseudo-transaction.
	Snapshot bool
	// Xid is the transaction's id (KindBegin of a streamed transaction;
	// 0 for the snapshot and for a non-transactional message).
	Xid uint32
	Row *Row // KindRow
}

// Progress is what the relay tells a stream about delivery. The stream
// reads it whenever it reports its position to the server.
type Progress interface {
	// Confirmed is the position that may be confirmed: every record of
	// every transaction committed before it is acknowledged by Kafka.
	Confirmed() LSN
	// InFlight counts records sent and not yet acknowledged; while it is
	// not zero the stream reports acknowledgements promptly.
	InFlight() int
	// Oldest is the commit time of the oldest transaction not yet
	// confirmed; zero when there is none.
	Oldest() time.Time
}

// Stream is one session of a source: one connection's worth of events.
// All its methods are called from one goroutine, the relay's session.
type Stream interface {
	// From is the position the stream starts at: events before it were
	// delivered by an earlier session.
	From() LSN
	// Start begins yielding events (the initial snapshot first, when the
	// session has one). The stream reads p, whose position starts at
	// From, whenever it reports its position to the server.
	Start(ctx context.Context, p Progress) error
	// Next returns the next event. While it waits it keeps the server
	// informed, reading Progress. It returns ctx's error when ctx ends,
	// ErrEnd when the stream has nothing more to yield by design.
	Next(ctx context.Context) (*Event, error)
	// KeepAlive answers the server while the relay cannot take the next
	// event (its in-flight budget is exhausted), so that a slow Kafka
	// never looks like a dead client.
	KeepAlive(ctx context.Context) error
	// SnapshotDone records that Kafka acknowledged the whole initial
	// snapshot; streaming starts after it.
	SnapshotDone(ctx context.Context) error
	// Close reports the final position and ends the session.
	Close(ctx context.Context, end Ending) error
	// Origin names where the stream's positions come from: the server and
	// timeline ("<system id>/<timeline>"; "": a source without one), and
	// whether it resumed an existing slot (false: created in this session,
	// or no slot). The skip rule compares a recorded position only with a
	// stream of the same origin that resumed its slot.
	Origin() (server string, resumed bool)
}

// Ending says how a session ended, so that a source may drop what it would
// otherwise keep (slot.drop.on.stop).
type Ending struct {
	Orderly  bool // a requested stop, not a failure
	Complete bool // every record acknowledged, no transaction left half read
}

// ErrEnd reports from Stream.Next or Source.Open that there is nothing to
// stream by design (snapshot.mode=initial_only): the relay stops cleanly.
var ErrEnd = errors.New("nothing more to stream")

// Known is what the relay knows of its position when it opens a stream.
type Known struct {
	// Confirmed is what this process confirmed in earlier sessions; zero
	// in a new process.
	Confirmed LSN
	// Recorded is the position recorded outside the database (the offsets
	// topic), which survives a failover; zero when none was recorded (a
	// first start).
	Recorded LSN
	// RecordedIn and Forget say, for messages, where Recorded was read
	// and how to delete it.
	RecordedIn, Forget string
	// Within, when set, is a point inside the transaction after Recorded
	// up to which that transaction was delivered too (Debezium records the
	// last event it processed, which may be in the middle of one).
	Within Within
	// RecordedOrigin is the server and timeline Recorded is on ("":
	// unknown, as in Debezium's records); RecordedBy names who wrote it
	// ("outboxrelay" or "Debezium").
	RecordedOrigin, RecordedBy string
}

// Within is a point inside a transaction: its rows before LSN, and the
// first Count rows at LSN (rows of one multi-row WAL record share it),
// were delivered.
type Within struct {
	Xid   uint32 // the transaction's id; Count 0: no point
	LSN   LSN
	Count int64
}

// Delivered reports whether the row at lsn, the n-th of the transaction
// at that LSN (from 1), is at or before the point.
func (w Within) Delivered(lsn LSN, n int64) bool {
	return lsn < w.LSN || lsn == w.LSN && n <= w.Count
}

// Last is the latest position the relay is known to have delivered.
func (k Known) Last() LSN { return max(k.Confirmed, k.Recorded) }

// Source opens streams, one per session. Its Open is called again after a
// retryable failure.
type Source interface {
	// Acquire waits until this instance may stream (a failover lock held
	// by another instance); the relay reads its recorded position after
	// it, so that a standby that takes over reads it fresh.
	Acquire(ctx context.Context) error
	Open(ctx context.Context, known Known) (Stream, error)
	// Retryable decides whether an error of Open or of a stream ends only
	// the session (retried) or the relay.
	Retryable(err error) bool
	// Holds says whether this instance still holds the failover lock
	// Acquire took, asked on a connection of its own; safe for any
	// goroutine. A source without a lock has no standby: true.
	Holds(ctx context.Context) (bool, error)
	// Close releases what the source keeps across sessions.
	Close()
}
