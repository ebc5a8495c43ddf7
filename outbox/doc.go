// Package outbox is the producer side of the transactional outbox: it
// writes events into the outbox table inside the caller's own database
// transaction, so the business change and its events commit or roll back
// together. outboxrelay then publishes each committed row to Kafka, and
// package consumer applies each event once on the other side.
//
// The whole pattern, end to end:
//
//  1. Producer (this package): in one transaction, write the business row
//     (INSERT INTO orders …) and the event (Writer.Write). If either fails,
//     both roll back: no event is ever published for an order that does
//     not exist, and no order exists without its event.
//  2. Relay (outboxrelay run): streams committed outbox rows from the WAL
//     and sends each to Kafka, topic from the route column, key from the
//     key column, value = the payload, header "id" = the event id. It
//     delivers at least once: after a crash a row may be sent again.
//  3. Consumer (package consumer): for each message, in one transaction,
//     records (consumer, event id) in processed_events and runs the side
//     effect; a message seen before is skipped. At-least-once delivery
//     then applies every side effect exactly once.
//
// # Writing events
//
// Build one Writer at start-up. Its table and column names come from
// Options, whose fields and defaults are the EventRouter's own
// (table.field.event.id=id, table.field.event.key=aggregateid,
// route.by.field=aggregatetype, table.field.event.payload=payload), or,
// better, from the connector JSON the relay runs with (LoadOptions), so
// producer and relay cannot disagree about a name:
//
//	opts, err := outbox.LoadOptions("connector.json")
//	w, err := outbox.New(ctx, pool, opts) // reads the table's columns once
//
// Then, in each transaction (pgx.Tx here; WriteSQL takes a *sql.Tx):
//
//	tx, err := pool.Begin(ctx)
//	defer tx.Rollback(ctx)
//	_, err = tx.Exec(ctx, `INSERT INTO orders (id, customer_id, total_cents) VALUES ($1, $2, $3)`, id, customer, cents)
//	err = w.Write(ctx, tx, outbox.Event{
//		AggregateType: "orders",          // the route value: the topic
//		AggregateID:   id,                // the record key: per-order ordering
//		Payload:       OrderPlaced{…},    // marshalled with encoding/json, now
//	})
//	err = tx.Commit(ctx)
//
// Several events passed to one Write go in one INSERT statement.
//
// The payload is serialized when it is written, never when it is relayed:
// the row carries the exact bytes the consumer will read. Pass []byte or
// json.RawMessage to write bytes as they are; anything else is marshalled
// with encoding/json. Put enough in the payload that consumers need not
// call back for the current state.
//
// The event id is the consumer's deduplication key. When Event.ID is empty
// the column's DEFAULT makes it (a bigserial, or sql/outbox.sql's
// outbox_uuidv7()); without a DEFAULT Write generates a UUIDv7 (NewID).
//
// # Errors before writing
//
// Write checks every event against the table's columns before it sends
// anything, so a bad event never aborts the caller's transaction: a payload
// that is not JSON for a json or jsonb column, an empty route value (the
// relay would stop at a row without a topic), a route value that gives an
// illegal topic name, a text that is not a UUID or integer for such a
// column, a NULL or a missing value for a NOT NULL column, a column the
// table does not have. Each is a *ColumnError naming the column and the
// connector key that names it. New refuses a table that lacks a column the
// options name.
//
// # Without a table: Emitter
//
// Emitter.Emit writes the same events as logical decoding messages
// (pg_logical_emit_message(true, prefix, JSON)) in the caller's
// transaction instead of rows: still atomic with the business write, with
// no table to grow, vacuum or clean up. The JSON object's members are named
// by the same Options; the relay routes it when its connector JSON chains
// DecodeLogicalDecodingMessageContent before the EventRouter (see
// docs/messages.md). Options.MessagePrefix (from
// message.prefix.include.list with LoadOptions, when that is one literal
// prefix; otherwise LoadOptions asks for it) is the prefix. NewEmitter
// refuses a prefix the relay's prefix lists would skip.
package outbox
