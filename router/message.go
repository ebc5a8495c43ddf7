package router

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/outboxrelay/outboxrelay/capture"
)

// The names of a logical decoding message's two fields (capture.Row's
// Prefix and Content) where a column's name is wanted: a RowError names the
// content, and the poison policy dumps a message as a row of these two
// columns.
const (
	MessagePrefixColumn  = "prefix"
	MessageContentColumn = "content"
)

// MessageTable is what Event.Table says for a message: errors and
// dead-letter headers name the message's prefix there.
func MessageTable(prefix string) string { return "pg_logical_emit_message:" + prefix }

// routeMessage applies DecodeLogicalDecodingMessageContent and then the
// EventRouter to a logical decoding message: the content must be a JSON
// object, whose members become the fields the EventRouter reads, as
// Debezium 3.7.1 builds them (JsonSchemaData): strings, int32 or int64
// integers, doubles, booleans, nested objects and arrays; a null member is
// left out unless fields.null.include, and so is an empty array.
func (r *Router) routeMessage(ev *Event) (Record, error) {
	if r.msgTable == "" || ev.Row.Prefix != r.msgPrefix {
		r.msgPrefix, r.msgTable = ev.Row.Prefix, MessageTable(ev.Row.Prefix)
	}
	// The message's members become the columns of a row routed as an
	// insert, which errors name by the message's table.
	row := &r.msgRow
	*row = capture.Row{Op: capture.OpCreate, Table: r.msgTable, Position: ev.Row.Position, Columns: row.Columns[:0]}
	r.msg = Event{Row: row, CommitLSN: ev.CommitLSN, CommitTime: ev.CommitTime, ProcessedAt: ev.ProcessedAt, structured: true}
	var err error
	r.msgArena = r.msgArena[:0]
	row.Columns, r.msgArena, err = decodeMessageFields(row.Columns, r.msgArena, ev.Row.Content, r.cfg.FieldsNullInclude)
	if err != nil {
		hint := "; Debezium's " + DecodeMessageClass + " fails on it too: emit a JSON object"
		switch {
		case errors.Is(err, errNumber):
			hint = "; emit the number as a JSON string, or one that fits"
		case errors.Is(err, errEmptyElement):
			hint = "; Debezium's " + DecodeMessageClass + " fails on it too: leave the empty array out"
		}
		e := r.rowError(ev, "", MessageContentColumn, "", err.Error()+hint)
		e.ConfigKey = "transforms." + r.cfg.MessagesAlias + ".type"
		return Record{}, e
	}
	return r.route(&r.msg)
}

// decodeMessageFields appends the top-level members of a message's JSON
// content to cols, their text to arena (which the columns point into).
func decodeMessageFields(cols []capture.Column, arena, content []byte, nullInclude bool) ([]capture.Column, []byte, error) {
	// Debezium: content.startsWith("{") || startsWith("["), and an array
	// then fails its cast to a Struct.
	if len(content) == 0 || content[0] != '{' {
		return cols, arena, fmt.Errorf("the message content is not a JSON object (it starts with %q)", preview(content))
	}
	// Columns alias the arena; when it grows they keep the old array,
	// whose bytes nothing overwrites (every column's slice is capped).
	arena = arena[:0]
	d := &msgDecoder{dec: json.NewDecoder(bytes.NewReader(content)), nullInclude: nullInclude}
	d.dec.UseNumber()
	if _, err := d.dec.Token(); err != nil { // the '{'
		return cols, arena, fmt.Errorf("the message content is not valid JSON: %v", err)
	}
	first := len(cols)
	for d.dec.More() {
		tok, err := d.dec.Token()
		if err != nil {
			return cols, arena, fmt.Errorf("the message content is not valid JSON: %v", err)
		}
		name := tok.(string)
		col, keep, err := d.field(name, &arena)
		if err != nil {
			return cols, arena, err
		}
		if !keep {
			col = capture.Column{Name: name, OID: oidLeftOut} // holds its place for a repeated name
		}
		cols = append(cols, col)
	}
	if _, err := d.dec.Token(); err != nil { // the '}'; like Jackson's readTree, trailing text is ignored
		return cols, arena, fmt.Errorf("the message content is not valid JSON: %v", err)
	}
	members := cols[first:]
	if order := lastValues(len(members), func(i int) string { return members[i].Name }); order != nil {
		members = slices.Clone(members)
		cols = cols[:first]
		for _, i := range order {
			cols = append(cols, members[i])
		}
	}
	kept := cols[:first]
	for _, c := range cols[first:] {
		if c.OID != oidLeftOut {
			kept = append(kept, c)
		}
	}
	return kept, arena, nil
}

// errNumber marks a message number outboxrelay cannot put in a record (an
// integer beyond a long, a number beyond a double), so that the error's
// hint is about the number, not the content's shape.
var errNumber = errors.New("not representable")

// errEmptyElement is an empty array as an array's element: it has no
// schema, and Debezium's JsonSchemaData fails on it (case 56).
var errEmptyElement = errors.New("an empty array inside an array, which Debezium cannot give a schema")

// oidLeftOut marks, while a message's members are read, a member Debezium
// leaves out (no real column has OID 0).
const oidLeftOut = 0

// lastValues is Jackson's answer to a repeated member name: its readTree
// keeps one entry per name, the last value in the first one's place. It
// returns, in the order of the names' first occurrences, the index of
// each name's last one, or nil when no name of name(0..n-1) repeats.
func lastValues(n int, name func(int) string) []int {
	if !repeats(n, name) {
		return nil
	}
	at := make(map[string]int, n)
	var order []int
	for i := range n {
		if k, ok := at[name(i)]; ok {
			order[k] = i
			continue
		}
		at[name(i)] = len(order)
		order = append(order, i)
	}
	return order
}

// repeats reports whether a name occurs twice among name(0..n-1): a scan
// for small objects, a set for large ones (a message is untrusted input).
func repeats(n int, name func(int) string) bool {
	if n <= 16 {
		for i := range n {
			for j := range i {
				if name(i) == name(j) {
					return true
				}
			}
		}
		return false
	}
	seen := make(map[string]struct{}, n)
	for i := range n {
		if _, ok := seen[name(i)]; ok {
			return true
		}
		seen[name(i)] = struct{}{}
	}
	return false
}

// preview is the start of b, for an error message.
func preview(b []byte) string {
	if len(b) > 20 {
		return string(b[:20]) + "…"
	}
	return string(b)
}

// msgDecoder walks a message's JSON content token by token.
type msgDecoder struct {
	dec         *json.Decoder
	nullInclude bool
	members     []member // the open nested objects' members, innermost last
}

// field decodes one top-level member into a column; keep is false for a
// member Debezium leaves out (a null without fields.null.include, an empty
// array).
func (d *msgDecoder) field(name string, arena *[]byte) (capture.Column, bool, error) {
	tok, err := d.dec.Token()
	if err != nil {
		return capture.Column{}, false, fmt.Errorf("the message content is not valid JSON: %v", err)
	}
	col := capture.Column{Name: name, Nullable: true}
	start := len(*arena)
	switch t := tok.(type) {
	case string:
		*arena = append(*arena, t...)
		col.OID = oidText
	case json.Number:
		var oid uint32
		if *arena, oid, err = appendJavaNumber(*arena, string(t)); err != nil {
			return col, false, fmt.Errorf("field %q: %w", name, err)
		}
		col.OID = oid
	case bool:
		col.OID = oidBool
		*arena = append(*arena, "f"...)
		if t {
			(*arena)[start] = 't'
		}
	case nil:
		col.OID, col.Null = oidBytea, true // OPTIONAL_BYTES, as Debezium
		return col, d.nullInclude, nil
	case json.Delim:
		n := 0
		if *arena, n, err = d.appendComposite(*arena, t); err != nil {
			return col, false, fmt.Errorf("field %q: %w", name, err)
		}
		if t == '[' && n == 0 {
			return col, false, nil // an empty array has no schema: left out
		}
		col.OID = oidJSONB
	}
	col.Text = (*arena)[start:len(*arena):len(*arena)]
	return col, true, nil
}

// appendComposite renders the object or array whose opening delim was
// read, as Kafka Connect's JsonConverter writes the Struct Debezium built
// of it: members in document order, null members left out unless
// fields.null.include, empty-array members left out, strings escaped as
// Jackson escapes them, numbers as Java prints an int, long or double. It
// returns the number of members or elements.
func (d *msgDecoder) appendComposite(dst []byte, open json.Delim) ([]byte, int, error) {
	start, base := len(dst), len(d.members)
	defer func() { d.members = d.members[:base] }()
	dst = append(dst, byte(open))
	n := 0
	for d.dec.More() {
		mark := len(dst)
		if n > 0 {
			dst = append(dst, ',')
		}
		var name string
		if open == '{' {
			tok, err := d.dec.Token()
			if err != nil {
				return dst, n, err
			}
			name = tok.(string)
			dst = AppendJSONString(dst, name)
			dst = append(dst, ':')
		}
		valueAt := len(dst)
		var keep bool
		var err error
		if dst, keep, err = d.appendValue(dst, open == '{'); err != nil {
			return dst, n, err
		}
		if open == '{' {
			d.members = append(d.members, member{name: name, from: valueAt - start, to: len(dst) - start, keep: keep})
		}
		if !keep {
			dst = dst[:mark]
			continue
		}
		n++
	}
	if _, err := d.dec.Token(); err != nil {
		return dst, n, err
	}
	if open == '{' {
		dst, n = d.lastMemberValues(dst, start, d.members[base:], n)
	}
	return append(dst, byte(open)+2), n, nil // '{'+2 is '}', '['+2 is ']'
}

// member is where a nested object's member's value was rendered, relative
// to the object's '{'; keep is false for one Debezium leaves out.
type member struct {
	name     string
	from, to int
	keep     bool
}

// lastMemberValues rewrites the object rendered at dst[start:] (without
// its '}') when a member name repeats, as Jackson reads it: one member per
// name, the last value in the first one's place (lastValues). It returns
// dst and the number of members.
func (d *msgDecoder) lastMemberValues(dst []byte, start int, ms []member, n int) ([]byte, int) {
	order := lastValues(len(ms), func(i int) string { return ms[i].name })
	if order == nil {
		return dst, n
	}
	old := slices.Clone(dst[start:])
	dst = append(dst[:start], '{')
	n = 0
	for _, i := range order {
		if !ms[i].keep {
			continue
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		dst = AppendJSONString(dst, ms[i].name)
		dst = append(dst, ':')
		dst = append(dst, old[ms[i].from:ms[i].to]...)
		n++
	}
	return dst, n
}

// appendValue renders one value; keep is false for an object member that
// Debezium leaves out.
func (d *msgDecoder) appendValue(dst []byte, member bool) ([]byte, bool, error) {
	tok, err := d.dec.Token()
	if err != nil {
		return dst, false, err
	}
	switch t := tok.(type) {
	case string:
		return AppendJSONString(dst, t), true, nil
	case json.Number:
		if inf, ok := javaInfinity(string(t)); ok {
			// Jackson reads it as a double, Infinity, and JsonConverter
			// writes that as a string (QUOTE_NON_NUMERIC_NUMBERS).
			return AppendJSONString(dst, inf), true, nil
		}
		dst, _, err = appendJavaNumber(dst, string(t))
		return dst, true, err
	case bool:
		return strconv.AppendBool(dst, t), true, nil
	case nil:
		return append(dst, "null"...), !member || d.nullInclude, nil
	case json.Delim:
		dst, n, err := d.appendComposite(dst, t)
		if err == nil && !member && t == '[' && n == 0 {
			// An empty array has no schema; as an array's element
			// Debezium's JsonSchemaData fails on it (case 56).
			return dst, false, errEmptyElement
		}
		return dst, !(member && t == '[' && n == 0), err
	}
	return dst, false, errors.New("unexpected JSON token")
}

// appendJavaNumber appends a JSON number as Jackson's node for it prints:
// an integer as an int (oidInt4) or a long (oidInt8), any other number as
// a Java double (oidFloat8). An integer beyond a long is refused, as
// Debezium's Struct refuses the BigDecimal it makes of it.
func appendJavaNumber(dst []byte, text string) ([]byte, uint32, error) {
	if !strings.ContainsAny(text, ".eE") {
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return dst, 0, fmt.Errorf("integer %s does not fit a 64-bit long, which Debezium cannot put in its record: %w", text, errNumber)
		}
		oid := uint32(oidInt8)
		if n >= math.MinInt32 && n <= math.MaxInt32 {
			oid = oidInt4
		}
		return strconv.AppendInt(dst, n, 10), oid, nil
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsInf(f, 0) {
		return dst, 0, fmt.Errorf("number %s is out of a double's range: %w", text, errNumber)
	}
	return appendJavaDouble(dst, f), oidFloat8, nil
}

// javaInfinity is Java's text for a non-integer JSON number beyond a
// double's range: Double.parseDouble gives ±Infinity.
func javaInfinity(text string) (string, bool) {
	if !strings.ContainsAny(text, ".eE") {
		return "", false
	}
	f, _ := strconv.ParseFloat(text, 64)
	switch {
	case math.IsInf(f, 1):
		return "Infinity", true
	case math.IsInf(f, -1):
		return "-Infinity", true
	}
	return "", false
}

// appendJavaDouble appends f as Java's Double.toString writes it: plain
// with at least one decimal for 1e-3 <= |f| < 1e7, else "d.dddE±n".
func appendJavaDouble(dst []byte, f float64) []byte {
	if a := math.Abs(f); f == 0 || (a >= 1e-3 && a < 1e7) {
		start := len(dst)
		dst = strconv.AppendFloat(dst, f, 'f', -1, 64)
		if bytes.IndexByte(dst[start:], '.') < 0 {
			dst = append(dst, ".0"...)
		}
		return dst
	}
	s := strconv.FormatFloat(f, 'e', -1, 64) // 1.5e+10
	mant, exp, _ := strings.Cut(s, "e")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	e, _ := strconv.Atoi(exp)
	dst = append(dst, mant...)
	dst = append(dst, 'E')
	return strconv.AppendInt(dst, int64(e), 10)
}
