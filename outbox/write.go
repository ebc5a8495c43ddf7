package outbox

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/outboxrelay/outboxrelay/router"
)

// maxParams is PostgreSQL's limit on the parameters of one statement.
const maxParams = 65535

// Event is one outbox row. The relay turns it into a Kafka record: topic
// from AggregateType, key AggregateID, value Payload, header "id" = ID.
type Event struct {
	// ID is the event id (table.field.event.id). When empty, the column's
	// DEFAULT is used if it has one (a bigserial, or DEFAULT uuidv7()),
	// else Write generates a UUIDv7 (see NewID).
	ID string
	// AggregateType is the route value (route.by.field, Debezium's
	// "aggregatetype"; the column "type" in the polling article's
	// schema): route.topic.regex/replacement turn it into the topic. It
	// must not be empty.
	AggregateType string
	// AggregateID is the record key (table.field.event.key): events with
	// one key keep their order. Empty writes NULL.
	AggregateID string
	// Payload is the record value, fixed at write time: []byte or
	// json.RawMessage are written as they are (and must be JSON for a json
	// or jsonb column); any other value is marshalled with encoding/json.
	// nil writes NULL (a tombstone with route.tombstone.on.empty.payload).
	Payload any
	// Columns sets other columns by name, for example an event_type column
	// that a table.fields.additional.placement puts in a header. Values
	// are passed to the driver as they are; nil writes NULL.
	Columns map[string]any
}

// Writer writes events into one outbox table inside the caller's
// transaction. Build it with New or NewSQL; it is safe for concurrent use.
type Writer struct {
	opts  Options
	table string // quoted schema.table
	cols  map[string]column
	order []string // column names in table order

	mu     sync.Mutex // guards topics: a router.Router serves one goroutine
	topics *router.Router
}

func newWriter(opts Options, cols []column) (*Writer, error) {
	topics, err := router.New(opts.routerConfig(), nil)
	if err != nil {
		return nil, fmt.Errorf("outbox: %w", err)
	}
	w := &Writer{opts: opts, table: quotedName(opts.Table), cols: map[string]column{}, topics: topics}
	for _, c := range cols {
		w.cols[c.name] = c
		w.order = append(w.order, c.name)
	}
	for _, r := range w.roles() {
		c, ok := w.cols[r.name]
		if !ok {
			return nil, &ColumnError{Table: opts.Table, Column: r.name, Option: w.key(r.opt), Event: -1,
				Reason: fmt.Sprintf("the table has no such column (it has %s); add it, or set %s to the column that holds it", strings.Join(w.order, ", "), w.key(r.opt))}
		}
		if c.generated {
			return nil, &ColumnError{Table: opts.Table, Column: r.name, Option: w.key(r.opt), Event: -1, Reason: "the column is GENERATED, so it cannot be written; name an ordinary column"}
		}
	}
	return w, nil
}

// Options returns the validated options the Writer runs with.
func (w *Writer) Options() Options { return w.opts }

type role struct{ name, opt string }

// roles are the columns the EventRouter reads, in the order Write fills them.
func (w *Writer) roles() []role {
	return []role{
		{w.opts.IDColumn, "table.field.event.id"},
		{w.opts.KeyColumn, "table.field.event.key"},
		{w.opts.RouteColumn, "route.by.field"},
		{w.opts.PayloadColumn, "table.field.event.payload"},
	}
}

func (w *Writer) key(opt string) string { return "transforms." + w.opts.Alias + "." + opt }

// PgxExecer is what Write writes through: a pgx.Tx, or anything with pgx's
// Exec (a *pgx.Conn inside BEGIN … COMMIT).
type PgxExecer interface {
	Exec(ctx context.Context, sql string, arguments ...any) (pgconn.CommandTag, error)
}

// SQLExecer is what WriteSQL writes through: a *sql.Tx (or *sql.Conn).
type SQLExecer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// Write inserts events, in one statement, through tx: they commit or roll
// back with the caller's transaction. Every event is checked first; a bad
// one is a *ColumnError and nothing is sent, so the transaction stays
// usable.
func (w *Writer) Write(ctx context.Context, tx PgxExecer, events ...Event) error {
	stmt, args, err := w.build(ctx, events)
	if err != nil || stmt == "" {
		return err
	}
	if _, err := tx.Exec(ctx, stmt, args...); err != nil {
		return fmt.Errorf("outbox: inserting %d event(s) into %s: %w", len(events), w.opts.Table, err)
	}
	return nil
}

// WriteSQL is Write for database/sql.
func (w *Writer) WriteSQL(ctx context.Context, tx SQLExecer, events ...Event) error {
	stmt, args, err := w.build(ctx, events)
	if err != nil || stmt == "" {
		return err
	}
	if _, err := tx.ExecContext(ctx, stmt, args...); err != nil {
		return fmt.Errorf("outbox: inserting %d event(s) into %s: %w", len(events), w.opts.Table, err)
	}
	return nil
}

// cell is one value of the INSERT: a parameter with an optional cast.
type cell struct {
	arg  any
	cast string // "::text::uuid" or ""
}

// build checks the events and renders one INSERT for them. Columns an
// event leaves out get DEFAULT; a column no event fills is left out. The
// span-context column gets ctx's span context (Options.SpanContextColumn).
func (w *Writer) build(ctx context.Context, events []Event) (string, []any, error) {
	if len(events) == 0 {
		return "", nil, nil
	}
	rows := make([]map[string]*cell, len(events))
	used := map[string]bool{}
	span := w.spanCell(ctx)
	for i := range events {
		row, err := w.row(i, &events[i])
		if err != nil {
			return "", nil, err
		}
		if span != nil && row[w.opts.SpanContextColumn] == nil {
			row[w.opts.SpanContextColumn] = span
		}
		rows[i] = row
		for name := range row {
			used[name] = true
		}
	}
	var names []string
	for _, name := range w.order {
		if used[name] {
			names = append(names, name)
		}
	}
	if len(names)*len(events) > maxParams {
		return "", nil, fmt.Errorf("outbox: %d events of %d columns exceed PostgreSQL's %d parameters per statement; write at most %d per call", len(events), len(names), maxParams, maxParams/len(names))
	}
	var b strings.Builder
	b.WriteString("INSERT INTO " + w.table + " (")
	for i, name := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(quoteIdent(name))
	}
	b.WriteString(") VALUES ")
	args := make([]any, 0, len(names)*len(events))
	for r, row := range rows {
		if r > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for i, name := range names {
			if i > 0 {
				b.WriteString(", ")
			}
			c := row[name]
			if c == nil {
				b.WriteString("DEFAULT")
				continue
			}
			args = append(args, c.arg)
			b.WriteString("$" + strconv.Itoa(len(args)) + c.cast)
		}
		b.WriteByte(')')
	}
	return b.String(), args, nil
}

// spanCell is the span-context column's cell for ctx: nil when the table
// has no such column (or a generated one) or ctx holds no span.
func (w *Writer) spanCell(ctx context.Context) *cell {
	c, ok := w.cols[w.opts.SpanContextColumn]
	if !ok || c.generated {
		return nil
	}
	text := SpanContext(ctx, w.opts.SpanContextFormat)
	if text == "" {
		return nil
	}
	return textCell(c, text)
}

// row checks one event and returns its cells by column name.
func (w *Writer) row(i int, ev *Event) (map[string]*cell, error) {
	colErr := func(name, opt, reason string) error {
		e := &ColumnError{Table: w.opts.Table, Column: name, Event: i, EventID: ev.ID, Reason: reason}
		if opt != "" {
			e.Option = w.key(opt)
		}
		return e
	}
	row := map[string]*cell{}
	id := w.cols[w.opts.IDColumn]
	switch {
	case ev.ID != "":
		if err := checkText(id, ev.ID); err != nil {
			return nil, colErr(id.name, "table.field.event.id", err.Error())
		}
		row[id.name] = textCell(id, ev.ID)
	case id.hasDefault:
		// Left to the table's DEFAULT.
	case isTextual(id.baseType) || id.baseType == "uuid":
		row[id.name] = textCell(id, NewID())
	default:
		return nil, colErr(id.name, "table.field.event.id", fmt.Sprintf("no Event.ID given and the column (%s) has no DEFAULT to make one; set Event.ID or give the column a DEFAULT", id.sqlType))
	}

	route := w.cols[w.opts.RouteColumn]
	if ev.AggregateType == "" {
		return nil, colErr(route.name, "route.by.field", "the route value (Event.AggregateType) is empty, so the row would have no topic and stop the relay; set it")
	}
	if err := w.checkTopic(ev.AggregateType); err != nil {
		return nil, colErr(route.name, "route.by.field", err.Error())
	}
	if err := checkText(route, ev.AggregateType); err != nil {
		return nil, colErr(route.name, "route.by.field", err.Error())
	}
	row[route.name] = textCell(route, ev.AggregateType)

	key := w.cols[w.opts.KeyColumn]
	if ev.AggregateID != "" {
		if err := checkText(key, ev.AggregateID); err != nil {
			return nil, colErr(key.name, "table.field.event.key", err.Error())
		}
		row[key.name] = textCell(key, ev.AggregateID)
	} else {
		row[key.name] = &cell{cast: "::" + key.sqlType}
	}

	payload := w.cols[w.opts.PayloadColumn]
	pc, err := payloadCell(payload, ev.Payload)
	if err != nil {
		return nil, colErr(payload.name, "table.field.event.payload", err.Error())
	}
	row[payload.name] = pc

	if err := w.extraColumns(ev, row, colErr); err != nil {
		return nil, err
	}
	return row, w.checkNotNull(row, colErr)
}

// extraColumns adds Event.Columns to row.
func (w *Writer) extraColumns(ev *Event, row map[string]*cell, colErr func(name, opt, reason string) error) error {
	names := make([]string, 0, len(ev.Columns))
	for name := range ev.Columns {
		names = append(names, name)
	}
	sort.Strings(names) // the first bad column is the same every time
	for _, name := range names {
		c, ok := w.cols[name]
		switch {
		case !ok:
			return colErr(name, "", fmt.Sprintf("Event.Columns names a column the table does not have (it has %s)", strings.Join(w.order, ", ")))
		case c.generated:
			return colErr(name, "", "the column is GENERATED and cannot be written; leave it out of Event.Columns")
		case row[name] != nil:
			return colErr(name, "", "the column is already filled from the Event's own fields; leave it out of Event.Columns")
		}
		row[name] = &cell{arg: ev.Columns[name]}
	}
	return nil
}

// checkNotNull refuses a NULL, or a missing value, for a NOT NULL column
// without a default: PostgreSQL would abort the caller's transaction.
func (w *Writer) checkNotNull(row map[string]*cell, colErr func(name, opt, reason string) error) error {
	for _, name := range w.order {
		c := w.cols[name]
		if !c.notNull || c.generated {
			continue
		}
		v, set := row[name]
		switch {
		case set && v.arg == nil:
			return colErr(name, w.optionOf(name), "the value is NULL (or empty) but the column is NOT NULL; give it a value")
		case !set && !c.hasDefault:
			return colErr(name, w.optionOf(name), "the column is NOT NULL and has no DEFAULT; set it in Event.Columns")
		}
	}
	return nil
}

func (w *Writer) optionOf(name string) string {
	for _, r := range w.roles() {
		if r.name == name {
			return r.opt
		}
	}
	return ""
}

// checkTopic renders the route value the way the relay will and checks
// the topic name.
func (w *Writer) checkTopic(route string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := w.topics.Topic([]byte(route)); err != nil {
		return fmt.Errorf("route value %q gives no legal topic: %v", route, err)
	}
	return nil
}

// textCell passes s as text cast to the column's type, so that one string
// fits a uuid, bigint or text column alike.
func textCell(c column, s string) *cell {
	return &cell{arg: s, cast: "::text::" + c.sqlType}
}

// payloadCell serializes the payload for its column's type.
func payloadCell(c column, payload any) (*cell, error) {
	var data []byte
	switch p := payload.(type) {
	case nil:
		return &cell{cast: "::" + c.sqlType}, nil
	case []byte:
		if p == nil {
			return &cell{cast: "::" + c.sqlType}, nil
		}
		data = p
	case json.RawMessage:
		if p == nil {
			return &cell{cast: "::" + c.sqlType}, nil
		}
		data = p
	default:
		var err error
		if data, err = json.Marshal(payload); err != nil {
			return nil, fmt.Errorf("marshalling the payload (%T) to JSON: %v", payload, err)
		}
	}
	switch {
	case c.baseType == "json" || c.baseType == "jsonb":
		if !json.Valid(data) {
			return nil, fmt.Errorf("the payload is not valid JSON, which a %s column refuses; pass JSON bytes, or a value to marshal", c.sqlType)
		}
		return &cell{arg: string(data), cast: "::text::" + c.sqlType}, nil
	case c.baseType == "bytea":
		return &cell{arg: data, cast: "::bytea"}, nil
	case isTextual(c.baseType):
		return &cell{arg: string(data), cast: "::text::" + c.sqlType}, nil
	}
	return nil, fmt.Errorf("a payload column of type %s is not supported; use jsonb, json, text or bytea", c.sqlType)
}

func isTextual(typ string) bool {
	return typ == "text" || typ == "varchar" || typ == "bpchar"
}

// checkText refuses a string the column's type would refuse, before
// PostgreSQL aborts the transaction over it.
func checkText(c column, s string) error {
	switch c.baseType {
	case "uuid":
		if !isUUID(s) {
			return fmt.Errorf("%q is not a UUID, which this uuid column needs", s)
		}
	case "int2", "int4", "int8":
		bits := map[string]int{"int2": 16, "int4": 32, "int8": 64}[c.baseType]
		if _, err := strconv.ParseInt(s, 10, bits); err != nil {
			return fmt.Errorf("%q is not a %s, which this column needs", s, c.sqlType)
		}
	}
	return nil
}

// isUUID accepts the forms PostgreSQL's uuid input takes: 32 hex digits,
// optionally in braces, with a hyphen allowed after any group of four.
func isUUID(s string) bool {
	if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") {
		s = s[1 : len(s)-1]
	}
	n := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f', c >= 'A' && c <= 'F':
			n++
		case c == '-' && n%4 == 0 && n > 0 && n < 32 && i+1 < len(s) && s[i+1] != '-':
		default:
			return false
		}
	}
	return n == 32
}

func quoteIdent(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// quotedName quotes "schema.table" (Validate made sure of the one dot).
func quotedName(table string) string {
	schema, name, _ := strings.Cut(table, ".")
	return quoteIdent(schema) + "." + quoteIdent(name)
}

// ColumnError reports an event that cannot be written, or an outbox table
// that lacks a column the options name, before anything is sent to
// PostgreSQL.
type ColumnError struct {
	Table  string // schema.table
	Column string // the column at fault
	// Option is the connector key that names the column, for example
	// transforms.outbox.table.field.event.payload; empty for Event.Columns.
	Option  string
	Event   int    // index of the event in the Write call; -1 for New
	EventID string // Event.ID when the caller gave one
	Reason  string // what is wrong and what to do
}

func (e *ColumnError) Error() string {
	var b strings.Builder
	b.WriteString("outbox: ")
	if e.Event >= 0 {
		fmt.Fprintf(&b, "event %d", e.Event)
		if e.EventID != "" {
			fmt.Fprintf(&b, " (id %s)", e.EventID)
		}
		b.WriteString(" for ")
	}
	fmt.Fprintf(&b, "%s: column %q", e.Table, e.Column)
	if e.Option != "" {
		fmt.Fprintf(&b, " (%s)", e.Option)
	}
	return b.String() + ": " + e.Reason
}
