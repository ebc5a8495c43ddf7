package router

import "time"

// Op is the kind of change a decoded row comes from.
type Op int

const (
	// OpCreate is an INSERT streamed from the slot (Debezium op "c").
	OpCreate Op = iota
	// OpRead is a row read by the initial snapshot (Debezium op "r"); it is
	// routed exactly like an insert.
	OpRead
	// OpUpdate is an UPDATE; see Config.OpInvalidBehavior.
	OpUpdate
	// OpDelete is a DELETE; deleting dispatched outbox rows is normal
	// clean-up, so it never produces a record.
	OpDelete
	// OpMessage is a logical decoding message (pg_logical_emit_message)
	// routed through DecodeLogicalDecodingMessageContent (Config.Messages):
	// Columns are MessagePrefixColumn and MessageContentColumn, Table is
	// MessageTable(prefix).
	OpMessage
)

// String returns Debezium's one-letter operation code, used in logs.
func (o Op) String() string {
	switch o {
	case OpCreate:
		return "c"
	case OpRead:
		return "r"
	case OpUpdate:
		return "u"
	case OpDelete:
		return "d"
	case OpMessage:
		return "m"
	}
	return "?"
}

// Value is one column value in PostgreSQL's text format, as pgoutput sends
// it. Text aliases the decoder's memory: the router copies what it keeps and
// never holds Text past the Route call that received it.
type Value struct {
	OID  uint32 // the column's type OID (pg_type.oid)
	Text []byte // text output of the type; empty when Null
	Null bool
	// Unchanged marks an unchanged TOASTed value (pgoutput 'u'): PostgreSQL
	// did not send it. It can only appear in an UPDATE.
	Unchanged bool
}

// Column is a named column value of a decoded row.
type Column struct {
	Name  string
	Value Value
	// Nullable is true when the column accepts NULL (pg_attribute.attnotnull
	// is false). It only shows in JsonConverter schemas ("optional"), where
	// Debezium reads it from the catalog; pgoutput does not send it, so the
	// zero value means NOT NULL, which is what outbox columns usually are.
	Nullable bool
}

// Event is one decoded row of the outbox table and its transaction context.
type Event struct {
	Op Op
	// Columns is the new tuple; for a delete, the old (key) tuple.
	Columns []Column
	// OldKeyColumns is the old key tuple of an update when PostgreSQL sent
	// one (replica identity or primary-key change), else nil.
	OldKeyColumns []Column
	// KeyChanged reports that an update changed the primary key. Debezium
	// turns such an update into a delete plus a create and publishes the
	// create, so the router routes Columns as a create.
	KeyChanged bool
	// Table is "schema.table"; it names the row in errors and, with
	// JsonConverter schemas, the envelope schema.
	Table string

	CommitLSN  uint64    // commit LSN of the transaction
	CommitTime time.Time // commit time of the transaction; zero for snapshot reads
	Position   uint64    // position of the change within the stream, for errors and the DLQ
	// ProcessedAt is when the relay processed the row; the record timestamp
	// when neither the timestamp column nor a commit time is available.
	ProcessedAt time.Time

	// structured: the columns were decoded from a message's JSON content;
	// a jsonb column holds a nested object or array that Debezium carries
	// as a Struct, written as JSON whatever table.expand.json.payload says.
	structured bool
}

// column returns the column called name, or nil. hint is the index where
// the column was found last time: a table's column order rarely changes, so
// the common case is one string comparison.
func (ev *Event) column(name string, hint *int) *Column {
	cols := ev.Columns
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
