package relay

import (
	"context"
	"errors"

	"github.com/outboxrelay/outboxrelay/capture"
	"github.com/outboxrelay/outboxrelay/router"
)

// Delivery is the sink contract of a session, for both guarantees: the
// session drives it the same way, and the implementation decides what
// each step means (the wiring builds one from exactly.once.support).
// At-least-once: Send's ack is Kafka's acknowledgement and a confirmed
// position is recorded in the offsets topic every RecordEvery.
// Exactly-once (invariant 10): the records of whole PostgreSQL
// transactions, and the position after them, are committed together in
// Kafka transactions; Send's ack means "written inside the open
// transaction", and what may be confirmed is held at what Kafka
// committed.
//
// The session's goroutine calls every method but Record, which the
// session's recorder calls from its own goroutine (every RecordEvery, and
// once when the session ends).
type Delivery interface {
	// Open begins a session's delivery, before the source opens its
	// stream, and reads the position recorded outside the database; found
	// is false on a first start, or when positions are recorded nowhere.
	// Exactly-once, it also fences older instances and starts the
	// session's Kafka transactions.
	Open(ctx context.Context, s Opening) (pos Recorded, found bool, err error)
	// Confirmable wraps the checkpoint's progress with what the delivery
	// allows the stream to confirm, once the stream is open. Exactly-once:
	// held at what Kafka committed, never below st.From.
	Confirmable(ck capture.Progress, st Streaming) capture.Progress
	// Send hands one record over and returns without waiting for Kafka;
	// ack is called exactly once, from any goroutine, when the record is
	// delivered (nil) or failed for good (the relay then stops). Send
	// copies what it keeps: the record's buffers belong to the router and
	// are reused for the next row. An error wrapping ErrRecordRejected
	// condemns the record, not the connection: the row is poison.
	Send(ctx context.Context, rec *router.Record, ack func(error)) error
	// End marks the end of a PostgreSQL transaction at end, the position
	// after it (0: a point between snapshot rows, or after a heartbeat
	// between transactions, with no position). Exactly-once, a Kafka
	// transaction may commit there; at-least-once it means nothing.
	End(end capture.LSN)
	// Record makes a confirmed position, on the server and timeline
	// origin, durable; ack reports the outcome. At-least-once it writes
	// the offsets topic; exactly-once each Kafka commit carries its
	// position already, so Record acknowledges at once.
	Record(ctx context.Context, pos capture.LSN, origin string, ack func(error)) error
	// Where and Forget say, for messages, where positions are recorded
	// and how to delete the record. Where is "" when positions are
	// recorded nowhere (poll mode: the table is the position): the
	// session then records nothing.
	Where() string
	Forget() string
	// Flush waits until every record sent so far is delivered
	// (exactly-once: committed up to the last End).
	Flush(ctx context.Context) error
	// Err is the failure that ended delivery, nil while it goes on. One
	// marked final (package internal/terminal: fenced by a newer
	// instance) is the session's outcome whatever else ended it.
	Err() error
	// Close ends delivery (exactly-once: aborts an open Kafka transaction).
	Close() error
}

// Opening is what a delivery needs of the source when a session opens.
type Opening struct {
	// Holds says whether this instance still holds the source's failover
	// lock (capture.Source.Holds); the exactly-once delivery asks it
	// before the coordinator whether a fenced transaction timed out.
	Holds func(ctx context.Context) (bool, error)
}

// Streaming is what a delivery learns of the session's stream once it is
// open.
type Streaming struct {
	Origin string      // the server and timeline of its positions (capture.Stream.Origin; "": unknown)
	From   capture.LSN // the slot's confirmed position: confirmed already
}

// Recorded is a position read back by Delivery.Open.
type Recorded struct {
	// End: every transaction whose commit ends at or before it was
	// delivered.
	End capture.LSN
	// Within: the transaction after End was delivered up to this point
	// too (Debezium records the last event it processed).
	Within capture.Within
	Origin string // the server and timeline ("": not recorded)
	By     string // ByRelay or ByDebezium
}

// Writers of a recorded position.
const (
	ByRelay    = "outboxrelay"
	ByDebezium = "Debezium"
)

// ErrRecordRejected marks a Delivery.Send error that condemns the record,
// not the connection (e.g. larger than max.request.size): the row is
// poison.
var ErrRecordRejected = errors.New("record rejected")
