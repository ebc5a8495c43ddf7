package router

import (
	"time"

	"github.com/outboxrelay/outboxrelay/capture"
)

// Event is one row to route: the source's row as it yielded it, and its
// transaction's context. The router reads Row (its Op, Table, Columns,
// OldKey, KeyChanged, Position, and for capture.OpMessage Prefix and
// Content) and never keeps it nor its Text past the Route call.
type Event struct {
	Row *capture.Row

	CommitLSN  capture.LSN // commit LSN of the transaction
	CommitTime time.Time   // commit time of the transaction; zero for snapshot reads
	// ProcessedAt is when the relay processed the row; the record timestamp
	// when neither the timestamp column nor a commit time is available.
	ProcessedAt time.Time

	// structured: the columns were decoded from a message's JSON content;
	// a jsonb column holds a nested object or array that Debezium carries
	// as a Struct, written as JSON whatever table.expand.json.payload says.
	structured bool
}

// Table names the row in errors, logs and dead-letter headers: its table,
// or for a logical decoding message MessageTable of its prefix.
func (ev *Event) Table() string {
	if ev.Row.Op == capture.OpMessage {
		return MessageTable(ev.Row.Prefix)
	}
	return ev.Row.Table
}

// column returns the column called name, or nil. hint is the index where
// the column was found last time: a table's column order rarely changes, so
// the common case is one string comparison.
func (ev *Event) column(name string, hint *int) *capture.Column {
	cols := ev.Row.Columns
	if h := *hint; h >= 0 && h < len(cols) && cols[h].Name == name {
		return &cols[h]
	}
	for i := range cols {
		if cols[i].Name == name {
			*hint = i
			return &cols[i]
		}
	}
	return nil
}
