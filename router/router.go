package router

import (
	"crypto/rand"
	"fmt"
	"log/slog"
	"time"

	"github.com/outboxrelay/outboxrelay/capture"
)

// maxCachedTopics bounds the route-value → topic cache. Routes are usually
// a handful of aggregate types; the bound only protects memory against a
// table whose route column is unique per row.
const maxCachedTopics = 10000

// Router applies the EventRouter to decoded outbox rows. It keeps reusable
// buffers, so one Router serves one goroutine: the replication stream and
// the snapshot reader each make their own.
type Router struct {
	cfg    Config
	log    *slog.Logger
	regex  *topicRegex
	topics map[string]string // route value → topic, valid names only

	contextHeaders []Header // Debezium's __debezium.context.* headers, or nil
	hasEnvelope    bool     // at least one envelope placement
	envelopeKeys   [][]byte // `,"<alias>":` per placement, for envelope ones
	infer          schemaInference
	shapes         shapeCache // inferred payload schemas by shape
	columnSchemas  map[columnKey]*connectSchema

	// Column-index hints, one per configured column (see Event.column).
	hintID, hintKey, hintPayload, hintRoute, hintTimestamp, hintTrace int
	hintPlacements                                                    []int

	buf     []byte    // arena for keys, values and header values of one Route call
	scratch []byte    // payload JSON before the schema is known
	raw     []byte    // decoded bytea
	compact compactor // of expanded payloads, with their shapes for JsonConverter schemas
	headers []Header

	// A message's decoded fields (routeMessage), reused: the event and
	// row routed in its place, the arena their text is cut from, and the
	// last prefix with its MessageTable.
	msg                 Event
	msgRow              capture.Row
	msgArena            []byte
	msgPrefix, msgTable string
}

// New validates cfg and returns a Router. log receives the warnings the
// EventRouter logs (updates, payloads that are not JSON); nil discards them.
func New(cfg Config, log *slog.Logger) (*Router, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("creating router: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	regex, err := compileTopicRegex(cfg.RouteTopicRegex, cfg.RouteTopicReplacement)
	if err != nil { // Validate compiled it already
		return nil, fmt.Errorf("creating router: %w", err)
	}
	r := &Router{
		cfg:            cfg,
		log:            log,
		regex:          regex,
		topics:         make(map[string]string),
		envelopeKeys:   make([][]byte, len(cfg.placements)),
		hintPlacements: make([]int, len(cfg.placements)),
		infer: schemaInference{nullAsBytes: cfg.JSONPayloadNullBehavior == "optional_bytes",
			emptyAsStrings: cfg.JSONPayloadEmptyArrayBehavior == "optional_string"},
		buf:     make([]byte, 0, 4096),
		headers: make([]Header, 0, 8),
		compact: compactor{shapes: cfg.ValueConverter == ConverterJSONWithSchema},
	}
	for i, p := range cfg.placements {
		if p.kind == placeEnvelope {
			r.hasEnvelope = true
			k := AppendJSONString([]byte{','}, p.alias)
			r.envelopeKeys[i] = append(k, ':')
		}
	}
	if cfg.ExtendedHeaders {
		if r.cfg.RunID == "" {
			r.cfg.RunID = randomUUID()
		}
		r.contextHeaders = []Header{
			{Key: "__debezium.context.connectorLogicalName", Value: []byte(cfg.TopicPrefix)},
			{Key: "__debezium.context.taskId", Value: []byte("0")},
			{Key: "__debezium.context.connectorName", Value: []byte("postgresql")},
			{Key: "__debezium.context.runId", Value: []byte(r.cfg.RunID)},
		}
	}
	return r, nil
}

// Config returns the validated configuration the Router runs with.
func (r *Router) Config() Config { return r.cfg }

// Route appends the records for one decoded row to dst and returns it:
// one record for an insert or snapshot read (routed exactly like an
// insert), for an update that changed the primary key (Debezium turns it
// into a delete plus a create and publishes the create), and for a
// logical decoding message (Config.Messages); none for a delete (deleting
// dispatched outbox rows is normal clean-up) or another update (see
// Config.OpInvalidBehavior).
//
// Memory contract: Key, Value and the header values of the appended
// records (and the Headers slice itself) point into an arena owned by the
// Router. They stay valid only until the next Route call on the same
// Router; a caller that keeps a record longer (the sink, while the
// producer holds it) copies those bytes first. Topic and EventID are
// ordinary strings. Route never retains ev or its Text slices.
//
// A row that cannot be routed returns a *RowError and leaves dst as it was.
func (r *Router) Route(ev *Event, dst []Record) ([]Record, error) {
	switch ev.Row.Op {
	case capture.OpCreate, capture.OpRead:
	case capture.OpDelete:
		// Deleting published outbox rows is the normal clean-up.
		return dst, nil
	case capture.OpUpdate:
		// Debezium publishes the create half of a key-changing update.
		if !ev.Row.KeyChanged {
			return dst, r.unexpectedUpdate(ev)
		}
	case capture.OpMessage:
		if !r.cfg.Messages {
			return dst, r.rowError(ev, "", "", "", "a logical decoding message, but transforms has no "+DecodeMessageClass+"; this is a bug in the caller")
		}
		rec, err := r.routeMessage(ev)
		if err != nil {
			return dst, err
		}
		return append(dst, rec), nil
	default:
		return dst, r.rowError(ev, "", "", "", fmt.Sprintf("unknown operation %q; this is a bug in the caller", byte(ev.Row.Op)))
	}
	rec, err := r.route(ev)
	if err != nil {
		return dst, err
	}
	return append(dst, rec), nil
}

func (r *Router) route(ev *Event) (Record, error) {
	r.buf = r.buf[:0]
	r.headers = r.headers[:0]
	rec := Record{Partition: -1}

	// The event id comes first: every later error names it.
	idCol, err := r.need(ev, r.cfg.EventIDField, &r.hintID, optEventID, "")
	if err != nil {
		return rec, err
	}
	var idValue []byte
	if !idCol.Null {
		if idValue, err = r.arena(appendText(r.buf, idCol, &r.raw)); err != nil {
			return rec, r.rowError(ev, "", idCol.Name, optEventID, err.Error())
		}
		rec.EventID = string(idValue)
	}
	eid := rec.EventID

	routeCol, err := r.need(ev, r.cfg.RouteByField, &r.hintRoute, optRouteBy, eid)
	if err != nil {
		return rec, err
	}
	if routeCol.Null {
		return rec, r.rowError(ev, eid, routeCol.Name, optRouteBy, "the route value is NULL, so the row has no topic; give every outbox row a value in this column")
	}
	if rec.Topic, err = r.topicFor(routeCol.Text); err != nil {
		return rec, r.rowError(ev, eid, routeCol.Name, optRouteBy,
			fmt.Sprintf("%v; change the row's value or %s / %s so that every route gives a legal topic", err, r.cfg.key(optRouteRegex), r.cfg.key(optRouteReplacement)))
	}

	if rec.Timestamp, err = r.timestamp(ev, eid); err != nil {
		return rec, err
	}
	if rec.Partition, err = r.appendHeaders(ev, idValue, eid); err != nil {
		return rec, err
	}
	rec.Headers = r.headers[:len(r.headers):len(r.headers)]

	keyCol, err := r.need(ev, r.cfg.EventKeyField, &r.hintKey, optEventKey, eid)
	if err != nil {
		return rec, err
	}
	if rec.Key, err = r.key(keyCol); err != nil {
		return rec, r.rowError(ev, eid, keyCol.Name, optEventKey, err.Error())
	}

	payloadCol, err := r.need(ev, r.cfg.PayloadField, &r.hintPayload, optPayload, eid)
	if err != nil {
		return rec, err
	}
	rec.Value, err = r.value(ev, payloadCol, routeCol.Text, eid)
	return rec, err
}

// arena cuts the bytes appended since the last cut out of buf. The slice
// is capped so that a caller appending to it cannot overwrite the next one.
func (r *Router) arena(buf []byte, err error) ([]byte, error) {
	start := len(r.buf)
	r.buf = buf
	return buf[start:len(buf):len(buf)], err
}

// need returns the configured column, or a RowError naming the option when
// the row lacks it or PostgreSQL did not send its value.
func (r *Router) need(ev *Event, name string, hint *int, opt, eid string) (*capture.Column, error) {
	col := ev.column(name, hint)
	if col == nil {
		return nil, r.rowError(ev, eid, name, opt, fmt.Sprintf("the row has no column %q; add it to the table or set %s to the column that holds it", name, r.cfg.key(opt)))
	}
	if col.Unchanged {
		return nil, r.rowError(ev, eid, name, opt, "PostgreSQL did not send this unchanged TOASTed value; set REPLICA IDENTITY FULL on the outbox table")
	}
	return col, nil
}

func (r *Router) rowError(ev *Event, eid, column, opt, reason string) *RowError {
	e := &RowError{LSN: ev.CommitLSN, Position: ev.Row.Position, Table: ev.Table(), EventID: eid, Column: column, Reason: reason}
	if opt != "" {
		e.ConfigKey = r.cfg.key(opt)
	}
	return e
}

// topicFor renders a route value into a topic, caching the answer: the
// regex runs once per distinct route value, not once per row.
func (r *Router) topicFor(value []byte) (string, error) {
	if t, ok := r.topics[string(value)]; ok {
		return t, nil
	}
	v := string(value)
	t := r.regex.topic(v)
	if err := CheckTopicName(t); err != nil {
		return "", err
	}
	if len(r.topics) >= maxCachedTopics {
		clear(r.topics)
	}
	r.topics[v] = t
	return t, nil
}

// timestamp is the record's CreateTime: the timestamp column when set and
// not NULL, else the commit time (Debezium uses the processing time; the
// commit time is the same on every replay), else the processing time.
func (r *Router) timestamp(ev *Event, eid string) (time.Time, error) {
	fallback := ev.CommitTime
	if fallback.IsZero() {
		fallback = ev.ProcessedAt
	}
	if r.cfg.TimestampField == "" {
		return fallback, nil
	}
	col, err := r.need(ev, r.cfg.TimestampField, &r.hintTimestamp, optTimestamp, eid)
	if err != nil {
		return time.Time{}, err
	}
	if col.Null {
		return fallback, nil
	}
	t, err := eventTimestamp(col)
	if err != nil {
		return time.Time{}, r.rowError(ev, eid, col.Name, optTimestamp, fmt.Sprintf("%v (text %q)", err, col.Text))
	}
	return t, nil
}

// appendHeaders adds the headers in Debezium's order (context, trace, id,
// header placements) and returns the partition a partition placement
// chose, or -1.
func (r *Router) appendHeaders(ev *Event, idValue []byte, eid string) (int, error) {
	// The create half of a key-changing update carries the old key, as
	// Debezium's PostgreSQL connector adds it, before everything else.
	if ev.Row.Op == capture.OpUpdate && ev.Row.KeyChanged && len(ev.Row.OldKey) > 0 {
		old, err := r.arena(r.appendOldKey(r.buf, ev))
		if err != nil {
			return -1, r.rowError(ev, eid, "", "", "rendering the old key: "+err.Error())
		}
		r.headers = append(r.headers, Header{Key: "__debezium.oldkey", Value: old})
	}
	if !ev.structured {
		// Debezium's message records are made without the context
		// headers (LogicalDecodingMessageMonitor).
		r.headers = append(r.headers, r.contextHeaders...)
	}
	r.appendTraceHeaders(ev, eid)
	r.headers = append(r.headers, Header{Key: "id", Value: idValue})
	partition := -1
	for i, p := range r.cfg.placements {
		col, err := r.placementColumn(ev, i, eid)
		if err != nil {
			return partition, err
		}
		if col == nil {
			continue
		}
		switch p.kind {
		case placeHeader:
			var value []byte
			if !col.Null {
				if value, err = r.arena(appendText(r.buf, col, &r.raw)); err != nil {
					return partition, r.rowError(ev, eid, col.Name, optPlacement, err.Error())
				}
			}
			r.headers = append(r.headers, Header{Key: p.alias, Value: value})
		case placePartition:
			// The last partition placement wins, as in Debezium.
			if partition, err = partitionOf(col); err != nil {
				return partition, r.rowError(ev, eid, col.Name, optPlacement, err.Error())
			}
		}
	}
	return partition, nil
}

// appendOldKey renders the old key columns as SimpleHeaderConverter
// writes a key Struct: a JSON object in column order.
func (r *Router) appendOldKey(dst []byte, ev *Event) ([]byte, error) {
	dst = append(dst, '{')
	for i := range ev.Row.OldKey {
		c := &ev.Row.OldKey[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendJSONString(dst, c.Name)
		dst = append(dst, ':')
		var err error
		if dst, err = appendJSONValue(dst, c, r.cfg.DecimalHandlingMode, &r.raw); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

// placementColumn returns the column of placement i; nil without error
// when it is missing and table.field.additional.missing=ignore.
func (r *Router) placementColumn(ev *Event, i int, eid string) (*capture.Column, error) {
	p := r.cfg.placements[i]
	col := ev.column(p.column, &r.hintPlacements[i])
	if col == nil && r.cfg.AdditionalMissing == "ignore" {
		return nil, nil
	}
	return r.need(ev, p.column, &r.hintPlacements[i], optPlacement, eid)
}

func partitionOf(v *capture.Column) (int, error) {
	if !isInteger(v.OID) {
		return 0, fmt.Errorf("a partition placement needs an integer column (smallint, integer or bigint); this one has type %s", typeName(v.OID))
	}
	if v.Null {
		return 0, fmt.Errorf("the partition is NULL; give every row a partition or drop the partition placement")
	}
	n, ok := parseInt(v.Text)
	if !ok || n < 0 || n > 1<<31-1 {
		return 0, fmt.Errorf("partition %q is not between 0 and 2147483647", v.Text)
	}
	return int(n), nil
}

// appendTraceHeaders forwards the W3C trace context of the span-context
// column, when the row has one.
func (r *Router) appendTraceHeaders(ev *Event, eid string) {
	col := ev.column(r.cfg.TracingSpanContextField, &r.hintTrace)
	if col == nil || col.Null || col.Unchanged {
		return
	}
	parent, state, ok := spanContext(col.Text)
	if !ok {
		r.log.Warn("span context column holds no valid W3C traceparent; the record gets no trace headers",
			append(r.rowAttrs(ev, eid), slog.String("column", col.Name))...)
		return
	}
	value, _ := r.arena(append(r.buf, parent...), nil)
	r.headers = append(r.headers, Header{Key: "traceparent", Value: value})
	if len(state) > 0 {
		// Java's Properties.store escapes '=' and ':' of a value
		// ("rojo\=00f0…"); Properties.load, which Debezium reads it with,
		// takes them back.
		value, _ = r.arena(appendUnescaped(r.buf, state), nil)
		r.headers = append(r.headers, Header{Key: "tracestate", Value: value})
	}
}

// key serializes the key column with key.converter.
func (r *Router) key(col *capture.Column) ([]byte, error) {
	buf := r.buf
	var err error
	switch r.cfg.KeyConverter {
	case ConverterString:
		if col.Null {
			return nil, nil
		}
		buf, err = appendText(buf, col, &r.raw)
	case ConverterJSON:
		buf, err = appendJSONValue(buf, col, r.cfg.DecimalHandlingMode, &r.raw)
	default:
		buf = append(buf, `{"schema":`...)
		buf = appendSchema(buf, r.columnSchema(col), "")
		buf = append(buf, `,"payload":`...)
		buf, err = appendJSONValue(buf, col, r.cfg.DecimalHandlingMode, &r.raw)
		buf = append(buf, '}')
	}
	return r.arena(buf, err)
}

// value serializes the payload (and envelope placements) with
// value.converter; nil is a tombstone.
func (r *Router) value(ev *Event, payload *capture.Column, routeValue []byte, eid string) ([]byte, error) {
	// Debezium: payload == null || payload.toString().trim().isEmpty().
	if r.cfg.RouteTombstoneOnEmptyPayload && (payload.Null || isBlank(payload.Text)) {
		return nil, nil
	}
	buf := r.buf
	var err error
	switch {
	case r.cfg.ValueConverter == ConverterJSONWithSchema:
		buf, err = r.appendValueWithSchema(buf, ev, payload, routeValue, eid)
	case r.hasEnvelope:
		// StringConverter would print a Connect Struct's toString(); the
		// JSON envelope is written instead (docs/compatibility.md).
		buf = append(buf, `{"payload":`...)
		buf, _, err = r.appendPayloadJSON(buf, ev, payload, eid)
		if err == nil {
			buf, err = r.appendEnvelopeFields(buf, ev, eid)
		}
		buf = append(buf, '}')
	case r.cfg.ValueConverter == ConverterString:
		if payload.Null {
			return nil, nil
		}
		var expanded bool
		start := len(buf)
		if buf, expanded, err = r.appendPayloadJSON(buf, ev, payload, eid); err == nil && !expanded {
			buf, err = appendText(buf[:start], payload, &r.raw)
		}
	default:
		buf, _, err = r.appendPayloadJSON(buf, ev, payload, eid)
	}
	if err != nil {
		if _, ok := err.(*RowError); ok {
			return nil, err
		}
		return nil, r.rowError(ev, eid, payload.Name, optPayload, err.Error())
	}
	return r.arena(buf, nil)
}

// appendPayloadJSON appends the payload as JSON: expanded (compacted,
// lossless) when table.expand.json.payload is on and the text is JSON,
// else as the JSON form of the column (a string literal for json, jsonb
// and text). A text payload that is not JSON falls back to the string with
// one warning, as Debezium does.
func (r *Router) appendPayloadJSON(dst []byte, ev *Event, payload *capture.Column, eid string) ([]byte, bool, error) {
	if payload.Null {
		return append(dst, "null"...), false, nil
	}
	if ev.structured && payload.OID == oidJSONB {
		// Not compacted: no shape. (JsonConverter schemas, which use the
		// shape, are refused with messages: Config.validateMessages.)
		r.compact.shape = r.compact.shape[:0]
		return append(dst, payload.Text...), true, nil // a Struct: JSON already
	}
	if r.cfg.ExpandJSONPayload {
		if !isStringish(payload.OID) {
			r.log.Warn("table.expand.json.payload is on but the payload column is not text or JSON; sending it unexpanded",
				append(r.rowAttrs(ev, eid), slog.String("column", payload.Name))...)
		} else {
			start := len(dst)
			out, err := r.compact.append(dst, payload.Text)
			if err == nil {
				return out, true, nil
			}
			dst = out[:start]
			r.log.Warn("payload is not valid JSON; sending it as a JSON string",
				append(r.rowAttrs(ev, eid), slog.String("column", payload.Name))...)
		}
	}
	out, err := appendJSONValue(dst, payload, r.cfg.DecimalHandlingMode, &r.raw)
	return out, false, err
}

// appendEnvelopeFields appends `,"<alias>":<value>` for every envelope
// placement, in configuration order.
func (r *Router) appendEnvelopeFields(dst []byte, ev *Event, eid string) ([]byte, error) {
	err := r.eachEnvelopeField(ev, eid, func(i int, col *capture.Column) error {
		var err error
		dst = append(dst, r.envelopeKeys[i]...)
		if ev.structured && col.OID == oidJSONB && !col.Null {
			dst = append(dst, col.Text...) // a Struct: JSON already
			return nil
		}
		if dst, err = appendJSONValue(dst, col, r.cfg.DecimalHandlingMode, &r.raw); err != nil {
			return r.rowError(ev, eid, col.Name, optPlacement, err.Error())
		}
		return nil
	})
	return dst, err
}

// eachEnvelopeField calls fn for every envelope placement whose column the
// row has, in configuration order.
func (r *Router) eachEnvelopeField(ev *Event, eid string, fn func(i int, col *capture.Column) error) error {
	for i, p := range r.cfg.placements {
		if p.kind != placeEnvelope {
			continue
		}
		col, err := r.placementColumn(ev, i, eid)
		if err != nil {
			return err
		}
		if col == nil {
			continue
		}
		if err := fn(i, col); err != nil {
			return err
		}
	}
	return nil
}

// appendValueWithSchema writes JsonConverter's {"schema":…,"payload":…}.
// The payload keeps its lossless text; the schema is the column's, or for
// an expanded payload the one Debezium infers (JsonSchemaData). When that
// inference fails, Debezium falls back to the unexpanded string, and so
// does this.
func (r *Router) appendValueWithSchema(dst []byte, ev *Event, payload *capture.Column, routeValue []byte, eid string) ([]byte, error) {
	var err error
	var expanded bool
	r.scratch, expanded, err = r.appendPayloadJSON(r.scratch[:0], ev, payload, eid)
	if err != nil {
		return dst, err
	}
	var schema *connectSchema
	if expanded {
		inferred, err := r.inferPayloadSchema(r.scratch)
		if err == nil {
			schema = inferred
		} else {
			r.log.Warn("cannot infer a schema for the expanded payload; sending it as a JSON string, as Debezium does",
				append(r.rowAttrs(ev, eid), slog.String("column", payload.Name), slog.String("reason", err.Error()))...)
			if r.scratch, err = appendJSONValue(r.scratch[:0], payload, r.cfg.DecimalHandlingMode, &r.raw); err != nil {
				return dst, err
			}
		}
	}
	if schema == nil {
		schema = r.columnSchema(payload)
	}
	if r.hasEnvelope {
		envelope := &connectSchema{typ: "struct", name: r.envelopeSchemaName(ev.Table(), routeValue)}
		envelope.fields = append(envelope.fields, schemaField{name: "payload", schema: schema})
		err := r.eachEnvelopeField(ev, eid, func(i int, col *capture.Column) error {
			envelope.fields = append(envelope.fields, schemaField{name: r.cfg.placements[i].alias, schema: r.columnSchema(col)})
			return nil
		})
		if err != nil {
			return dst, err
		}
		schema = envelope
	}
	dst = append(dst, `{"schema":`...)
	dst = appendSchema(dst, schema, "")
	dst = append(dst, `,"payload":`...)
	if r.hasEnvelope {
		dst = append(dst, `{"payload":`...)
		dst = append(dst, r.scratch...)
		if dst, err = r.appendEnvelopeFields(dst, ev, eid); err != nil {
			return dst, err
		}
		dst = append(dst, '}')
	} else {
		dst = append(dst, r.scratch...)
	}
	return append(dst, '}'), nil
}

// columnKey is what a column's schema depends on, decimal.handling.mode
// being fixed for a Router.
type columnKey struct {
	oid      uint32
	optional bool
}

// maxColumnSchemas bounds the cache of column schemas: a column's type
// may be any type's OID.
const maxColumnSchemas = 256

// columnSchema is columnSchema for col, kept with its JSON (memo) per type
// and nullability: a key or a payload left unexpanded has one schema, and
// making it again cost two allocations per record. The schemas it returns
// are shared: never changed.
func (r *Router) columnSchema(col *capture.Column) *connectSchema {
	k := columnKey{col.OID, col.Nullable}
	if s, ok := r.columnSchemas[k]; ok {
		return s
	}
	if r.columnSchemas == nil || len(r.columnSchemas) >= maxColumnSchemas {
		r.columnSchemas = make(map[columnKey]*connectSchema)
	}
	s := columnSchema(col.OID, col.Nullable, r.cfg.DecimalHandlingMode)
	s.memo = appendSchema(nil, s, "")
	r.columnSchemas[k] = s
	return s
}

// inferPayloadSchema is the schema Debezium infers for an expanded
// payload, from the router's cache of payload shapes when it has seen the
// shape before.
func (r *Router) inferPayloadSchema(compact []byte) (*connectSchema, error) {
	return r.shapes.lookup(r.compact.shape, compact, r.inferUncached)
}

func (r *Router) inferUncached(compact []byte) (*connectSchema, error) {
	tree, err := parseJSONTree(compact)
	if err != nil {
		return nil, err
	}
	s, err := r.infer.infer(r.cfg.PayloadField, tree)
	if err == nil && s == nil {
		err = fmt.Errorf("a payload that is null or an empty array has no schema")
	}
	return s, err
}

// envelopeSchemaName is Debezium's name for the envelope struct: the row
// schema's name "<prefix>.<schema>.<table>.Value" with the route value
// inserted before "Value".
func (r *Router) envelopeSchemaName(table string, routeValue []byte) string {
	name := table + "." + string(routeValue) + ".Value"
	if r.cfg.TopicPrefix != "" {
		name = r.cfg.TopicPrefix + "." + name
	}
	return name
}

// unexpectedUpdate applies table.op.invalid.behavior to an update that
// kept its primary key.
func (r *Router) unexpectedUpdate(ev *Event) error {
	eid := ""
	if col := ev.column(r.cfg.EventIDField, &r.hintID); col != nil && !col.Null && !col.Unchanged {
		eid = string(col.Text)
	}
	const msg = "outbox row updated; updates are not published"
	switch r.cfg.OpInvalidBehavior {
	case "error":
		r.log.Error(msg, r.rowAttrs(ev, eid)...)
	case "fatal":
		e := r.rowError(ev, eid, "", optOpInvalid, "an outbox row was updated and this option is fatal; only insert outbox rows, or set it to warn to skip updates")
		e.Fatal = true
		return e
	default:
		r.log.Warn(msg, r.rowAttrs(ev, eid)...)
	}
	return nil
}

func (r *Router) rowAttrs(ev *Event, eid string) []any {
	return []any{
		slog.String("lsn", ev.CommitLSN.String()),
		slog.String("table", ev.Table()),
		slog.String("event_id", eid),
	}
}

// randomUUID returns a version-4 UUID for the runId context header.
func randomUUID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand panics instead)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
