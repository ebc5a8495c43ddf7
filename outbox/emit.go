package outbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/outboxrelay/outboxrelay/internal/msgprefix"
	"github.com/outboxrelay/outboxrelay/router"
)

// DefaultMessagePrefix is the logical decoding message prefix an Emitter
// uses when Options.MessagePrefix is empty.
const DefaultMessagePrefix = "outbox"

// Emitter writes events as logical decoding messages instead of table
// rows: pg_logical_emit_message(true, prefix, content) in the caller's
// transaction, so an event is still atomic with the business change (it
// is decoded only if the transaction commits), but no outbox table grows,
// is vacuumed or cleaned up. The relay routes the messages when its
// connector JSON chains Debezium's DecodeLogicalDecodingMessageContent
// before the EventRouter (docs/messages.md). The content
// is a JSON object whose members are named by the same Options as a table
// write: {"<IDColumn>": …, "<RouteColumn>": …, "<KeyColumn>": …,
// "<PayloadColumn>": …, plus Event.Columns}. Emitter is safe for
// concurrent use.
type Emitter struct {
	opts   Options
	prefix string

	mu     sync.Mutex // guards topics: a router.Router serves one goroutine
	topics *router.Router
}

// NewEmitter validates opts (Table is not used) and returns an Emitter
// writing messages with opts.MessagePrefix, or DefaultMessagePrefix. A
// prefix that opts.MessagePrefixIncludeList does not match, or
// opts.MessagePrefixExcludeList matches, is an error: the relay would
// skip every event.
func NewEmitter(opts Options) (*Emitter, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	topics, err := router.New(opts.routerConfig(), nil)
	if err != nil {
		return nil, fmt.Errorf("outbox: %w", err)
	}
	prefix := opts.MessagePrefix
	if prefix == "" {
		prefix = DefaultMessagePrefix
	}
	lists, err := msgprefix.Parse(opts.MessagePrefixIncludeList, opts.MessagePrefixExcludeList)
	if err != nil {
		return nil, fmt.Errorf("outbox: %w", err)
	}
	if !lists.Includes(prefix) {
		return nil, fmt.Errorf("outbox: message prefix %q is skipped by the relay (message.prefix.include.list %q, message.prefix.exclude.list %q): every event would be lost; set Options.MessagePrefix to a prefix message.prefix.include.list matches and message.prefix.exclude.list does not",
			prefix, opts.MessagePrefixIncludeList, opts.MessagePrefixExcludeList)
	}
	return &Emitter{opts: opts, prefix: prefix, topics: topics}, nil
}

// Prefix is the message prefix the Emitter writes with; the relay's
// message.prefix.include.list must match it.
func (e *Emitter) Prefix() string { return e.prefix }

// Emit writes events as transactional logical decoding messages, in one
// statement, through tx, in their order. Every event is checked first; a
// bad one is an error naming it and nothing is sent. An empty ID is set to
// a new UUIDv7 in the events slice itself: pass a slice (evs...) to read
// the ids back, e.g. to log what was emitted for outboxrelay verify
// --emitted.
func (e *Emitter) Emit(ctx context.Context, tx PgxExecer, events ...Event) error {
	return e.emit(ctx, events, func(stmt string, args []any) error {
		_, err := tx.Exec(ctx, stmt, args...)
		return err
	})
}

// EmitSQL is Emit for database/sql.
func (e *Emitter) EmitSQL(ctx context.Context, tx SQLExecer, events ...Event) error {
	return e.emit(ctx, events, func(stmt string, args []any) error {
		_, err := tx.ExecContext(ctx, stmt, args...)
		return err
	})
}

// emit builds the statement and runs it with exec.
func (e *Emitter) emit(ctx context.Context, events []Event, exec func(stmt string, args []any) error) error {
	stmt, args, err := e.build(ctx, events)
	if err != nil || stmt == "" {
		return err
	}
	if err := exec(stmt, args); err != nil {
		return fmt.Errorf("outbox: emitting %d event(s) as messages with prefix %q: %w", len(events), e.prefix, err)
	}
	return nil
}

// build renders the statement: one pg_logical_emit_message per event,
// over a VALUES list, which PostgreSQL scans in its order. Each content
// gets ctx's span context as the span-context member.
func (e *Emitter) build(ctx context.Context, events []Event) (string, []any, error) {
	if len(events) == 0 {
		return "", nil, nil
	}
	args := []any{e.prefix}
	values := make([]string, len(events))
	span := SpanContext(ctx, e.opts.SpanContextFormat)
	for i := range events {
		content, err := e.content(i, &events[i], span)
		var ce *ColumnError
		if errors.As(err, &ce) {
			return "", nil, err
		}
		if err != nil {
			return "", nil, fmt.Errorf("outbox: event %d: %w", i, err)
		}
		args = append(args, string(content))
		values[i] = "($" + strconv.Itoa(len(args)) + "::text)"
	}
	stmt := "SELECT count(pg_logical_emit_message(true, $1::text, m)) FROM (VALUES " + strings.Join(values, ", ") + ") AS v(m)"
	return stmt, args, nil
}

// Content is the JSON object Emit writes for ev; an empty ID becomes a new
// UUIDv7 (NewID) in ev. As the table Writer, it refuses an Event.Columns
// name that one of the Event's own fields fills (a *ColumnError); unlike
// it, it cannot check the Columns' values against a column type, as there
// is no table: they are marshalled to JSON as they are.
func (e *Emitter) Content(ev *Event) ([]byte, error) { return e.content(0, ev, "") }

// content is Content for the i-th event of a call, with span, when not
// empty, as the span-context member (Options.SpanContextColumn) unless
// Event.Columns sets it.
func (e *Emitter) content(i int, ev *Event, span string) ([]byte, error) {
	o := &e.opts
	if ev.AggregateType == "" {
		return nil, fmt.Errorf("AggregateType (%s) is empty: the event has no topic", o.RouteColumn)
	}
	if err := e.checkTopic(ev.AggregateType); err != nil {
		return nil, err
	}
	// Debezium's decoder leaves a null member out (fields.null.include
	// false), and the EventRouter then fails on the missing field.
	if ev.AggregateID == "" {
		return nil, fmt.Errorf("AggregateID (%s) is empty: a message needs a key", o.KeyColumn)
	}
	if ev.Payload == nil {
		//lint:ignore ST1005 the message starts with the Event field's name
		return nil, fmt.Errorf("Payload (%s) is nil: a message needs a payload", o.PayloadColumn)
	}
	if ev.ID == "" {
		ev.ID = NewID()
	}
	payload, err := messagePayload(ev.Payload)
	if err != nil {
		return nil, err
	}
	if bytes.Equal(bytes.TrimSpace(payload), []byte("null")) {
		//lint:ignore ST1005 the message starts with the Event field's name
		return nil, fmt.Errorf("Payload (%s) is JSON null (a nil pointer, or the bytes null): Debezium's decoder leaves a null member out and the EventRouter then fails on the message; give the event a payload", o.PayloadColumn)
	}
	for _, own := range []string{o.IDColumn, o.RouteColumn, o.KeyColumn, o.PayloadColumn} {
		if _, dup := ev.Columns[own]; dup {
			return nil, &ColumnError{Table: router.MessageTable(e.prefix), Column: own, Event: i, EventID: ev.ID,
				Reason: "the column is already filled from the Event's own fields; leave it out of Event.Columns"}
		}
	}
	b := []byte{'{'}
	member := func(name string, value []byte) {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = router.AppendJSONString(b, name)
		b = append(b, ':')
		b = append(b, value...)
	}
	member(o.IDColumn, router.AppendJSONString(nil, ev.ID))
	member(o.RouteColumn, router.AppendJSONString(nil, ev.AggregateType))
	member(o.KeyColumn, router.AppendJSONString(nil, ev.AggregateID))
	member(o.PayloadColumn, payload)
	if _, set := ev.Columns[o.SpanContextColumn]; span != "" && !set {
		member(o.SpanContextColumn, router.AppendJSONString(nil, span))
	}
	for _, name := range sortedKeys(ev.Columns) {
		v, err := json.Marshal(ev.Columns[name])
		if err != nil {
			return nil, fmt.Errorf("marshalling column %q (%T): %v", name, ev.Columns[name], err)
		}
		member(name, v)
	}
	return append(b, '}'), nil
}

// messagePayload is the payload as JSON: bytes as they are (they must be
// JSON), anything else marshalled.
func messagePayload(p any) ([]byte, error) {
	var data []byte
	switch v := p.(type) {
	case []byte:
		data = v
	case json.RawMessage:
		data = v
	default:
		var err error
		if data, err = json.Marshal(p); err != nil {
			return nil, fmt.Errorf("marshalling the payload (%T) to JSON: %v", p, err)
		}
	}
	if !json.Valid(data) {
		return nil, fmt.Errorf("the payload is not valid JSON; pass JSON bytes, or a value to marshal")
	}
	return data, nil
}

// checkTopic refuses a route value that gives no legal topic.
func (e *Emitter) checkTopic(route string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, err := e.topics.Topic([]byte(route)); err != nil {
		return fmt.Errorf("route value %q gives no legal topic: %v", route, err)
	}
	return nil
}

// sortedKeys are m's keys in order, so the content is the same every time.
func sortedKeys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }
