package jsonschema

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/outboxrelay/outboxrelay/internal/connectschema"
)

// Append appends the body JsonSchemaConverter writes for payload (the JSON
// JsonConverter writes for this schema): JsonSchemaData.fromConnectData's
// JSON as Jackson prints it. Struct fields come in the schema's order, an
// absent or null field is its default, else null when optional, else left
// out; payload keys the schema does not have are dropped (a Connect Struct
// holds only its schema's fields); numbers are re-printed as Java prints
// the Connect value (int64 exact, a double as Double.toString); bytes stay
// base64. A null payload is the schema's default, "null" when optional, and
// an error for a required schema (the Java converter would send a tombstone).
// On error dst is returned as it was.
func (c *Codec) Append(dst, payload []byte) ([]byte, error) {
	payload = bytes.TrimSpace(payload)
	if !json.Valid(payload) {
		var v any
		err := json.Unmarshal(payload, &v)
		if err == nil {
			err = errors.New("more than one JSON value")
		}
		return dst, fmt.Errorf("encoding a JSON Schema body: reading the payload: %w", err)
	}
	if isNull(payload) && c.defaults[c.root] == nil && !c.root.Optional {
		return dst, errors.New("encoding a JSON Schema body: the payload is null and its schema is required without a default")
	}
	out, err := c.encode(dst, c.root, payload)
	if err != nil {
		return dst, fmt.Errorf("encoding a JSON Schema body: %w", err)
	}
	return out, nil
}

func isNull(raw []byte) bool { return len(raw) == 0 || string(raw) == "null" }

// encode is fromConnectData(schema, value) written out, for raw, the JSON
// text of the value (nil when absent), which json.Valid accepted. A required
// value that is null without a default appends nothing (fromConnectData
// returns null and the struct leaves the field out): the caller checks len.
func (c *Codec) encode(dst []byte, s *connectschema.Schema, raw []byte) ([]byte, error) {
	if isNull(raw) {
		if d := c.defaults[s]; d != nil {
			return append(dst, d...), nil
		}
		if s.Optional {
			return append(dst, "null"...), nil
		}
		return dst, nil
	}
	switch s.Type {
	case connectschema.Boolean:
		if string(raw) != "true" && string(raw) != "false" {
			return dst, mismatch(s, raw)
		}
		return append(dst, raw...), nil
	case connectschema.Int8, connectschema.Int16, connectschema.Int32, connectschema.Int64:
		return appendInt(dst, s, raw)
	case connectschema.Float, connectschema.Double:
		return appendFloat(dst, s, raw)
	case connectschema.String:
		if raw[0] != '"' {
			return dst, mismatch(s, raw)
		}
		return appendStringValue(dst, raw)
	case connectschema.Bytes:
		return appendBytes(dst, s, raw)
	case connectschema.Array:
		return c.appendArray(dst, s, raw)
	case connectschema.Map:
		return c.appendMap(dst, s, raw)
	case connectschema.Struct:
		return c.appendStruct(dst, s, raw)
	}
	return dst, fmt.Errorf("unknown type %q", s.Type)
}

func (c *Codec) appendArray(dst []byte, s *connectschema.Schema, raw []byte) ([]byte, error) {
	if raw[0] != '[' {
		return dst, mismatch(s, raw)
	}
	dst = append(dst, '[')
	for i, at := 0, firstElement(raw); raw[at] != ']'; i++ {
		item, next := nextElement(raw, at)
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = c.encodeOrNull(dst, s.Items, item); err != nil { // ArrayNode.add(null) adds a NullNode
			return dst, connectschema.Within(err, "["+strconv.Itoa(i)+"]")
		}
		at = next
	}
	return append(dst, ']'), nil
}

// maxStackFields is the number of struct fields whose values appendStruct
// keeps on the stack; a larger struct allocates.
const maxStackFields = 16

func (c *Codec) appendStruct(dst []byte, s *connectschema.Schema, raw []byte) ([]byte, error) {
	if raw[0] != '{' {
		return dst, mismatch(s, raw)
	}
	index := c.fields[s]
	var stack [maxStackFields][]byte
	var vals [][]byte
	if len(s.Fields) > maxStackFields {
		vals = make([][]byte, len(s.Fields))
	} else {
		vals = stack[:len(s.Fields)]
	}
	for at := firstElement(raw); raw[at] != '}'; {
		key, val, next := nextMember(raw, at)
		at = next
		i, ok := fieldIndex(index, key)
		if !ok {
			continue
		}
		if i < 0 {
			name, err := unquote(key)
			if err != nil {
				return dst, err
			}
			if i, ok = index[name]; !ok {
				continue
			}
		}
		vals[i] = val // a repeated key: the last one, as Jackson reads it
	}
	dst = append(dst, '{')
	first := true
	for i, f := range s.Fields {
		mark := len(dst)
		if !first {
			dst = append(dst, ',')
		}
		dst = appendJacksonString(dst, f.Name)
		dst = append(dst, ':')
		n := len(dst)
		var err error
		if dst, err = c.encode(dst, f.Schema, vals[i]); err != nil {
			return dst, connectschema.Within(err, "."+f.Name)
		}
		if len(dst) == n { // a required field without value: left out
			dst = dst[:mark]
			continue
		}
		first = false
	}
	return append(dst, '}'), nil
}

// fieldIndex looks a key's quoted text up without decoding it when it has
// no escapes: i < 0 with ok when it must be decoded first, !ok when the
// struct has no such field.
func fieldIndex(index map[string]int, key []byte) (i int, ok bool) {
	if bytes.IndexByte(key, '\\') >= 0 || !utf8.Valid(key) {
		return -1, true
	}
	i, ok = index[string(key[1:len(key)-1])]
	return i, ok
}

// entry is one map entry: the key decoded (a string, json.Number, bool or
// nil; the raw text for other keys), the value's JSON text.
type entry struct {
	k   any
	raw []byte
	v   []byte
}

// appendMap: JsonConverter writes a map with string keys as an object and
// any other as [[key,value],…]; JsonSchemaData writes an object only when
// the keys are required strings, else [{"key":…,"value":…},…].
func (c *Codec) appendMap(dst []byte, s *connectschema.Schema, raw []byte) ([]byte, error) {
	entries, err := mapEntries(s, raw)
	if err != nil {
		return dst, err
	}
	entries = javaMapOrder(s, entries)
	objectMode := s.Keys.Type == connectschema.String && !s.Keys.Optional
	if objectMode {
		dst = append(dst, '{')
	} else {
		dst = append(dst, '[')
	}
	for i, e := range entries {
		if i > 0 {
			dst = append(dst, ',')
		}
		if objectMode {
			k, ok := e.k.(string)
			if !ok {
				return dst, errors.New("a key is not a string")
			}
			dst = appendJacksonString(dst, k)
			dst = append(dst, ':')
			if dst, err = c.encodeOrNull(dst, s.Values, e.v); err != nil {
				return dst, connectschema.Within(err, "{"+k+"}")
			}
			continue
		}
		dst = append(dst, `{"key":`...)
		if dst, err = c.encodeOrNull(dst, s.Keys, e.raw); err != nil {
			return dst, connectschema.Within(err, "{key}")
		}
		dst = append(dst, `,"value":`...)
		if dst, err = c.encodeOrNull(dst, s.Values, e.v); err != nil {
			return dst, connectschema.Within(err, "{value}")
		}
		dst = append(dst, '}')
	}
	if objectMode {
		return append(dst, '}'), nil
	}
	return append(dst, ']'), nil
}

// mapEntries reads a map as JsonConverter writes it: an object, or an array
// of [key,value] pairs; or as JsonSchemaData writes it, an array of
// {"key":…,"value":…} (so that a body re-encodes to itself).
func mapEntries(s *connectschema.Schema, raw []byte) ([]entry, error) {
	var entries []entry
	switch raw[0] {
	case '{':
		err := members(raw, func(key, val []byte) error {
			k, err := unquote(key)
			entries = append(entries, entry{k: k, raw: key, v: val})
			return err
		})
		return entries, err
	case '[':
		i := 0
		err := elements(raw, func(e []byte) error {
			k, v, ok := pair(e)
			if !ok {
				return fmt.Errorf("entry %d is not a [key,value] pair", i)
			}
			i++
			entries = append(entries, entry{k: keyValue(k), raw: k, v: v})
			return nil
		})
		return entries, err
	}
	return nil, mismatch(s, raw)
}

// pair splits [k,v] or {"key":k,"value":v}.
func pair(e []byte) (k, v []byte, ok bool) {
	var parts [][]byte
	switch e[0] {
	case '[':
		_ = elements(e, func(x []byte) error { parts = append(parts, x); return nil })
		if len(parts) == 2 {
			return parts[0], parts[1], true
		}
	case '{':
		var n int
		_ = members(e, func(key, val []byte) error {
			n++
			switch string(key) {
			case `"key"`:
				k = val
			case `"value"`:
				v = val
			}
			return nil
		})
		return k, v, n == 2 && k != nil && v != nil
	}
	return nil, nil, false
}

// keyValue decodes a map key for hashing: string, json.Number, bool, nil,
// or the raw text itself for arrays and objects.
func keyValue(raw []byte) any {
	switch {
	case raw[0] == '"':
		s, _ := unquote(raw)
		return s
	case string(raw) == "null":
		return nil
	case string(raw) == "true" || string(raw) == "false":
		return string(raw) == "true"
	case raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9':
		return json.Number(raw)
	}
	return raw
}

// javaMapOrder puts the entries in the order of the HashMap JsonConverter
// fills with them (toConnect of a map): a repeated key keeps its first place
// and its last value, then HashMap iteration order. Keys Java hashes by
// identity keep the payload's order.
func javaMapOrder(s *connectschema.Schema, entries []entry) []entry {
	var uniq []entry
	var hashes []uint32
	seen := map[string]int{}
	for _, e := range entries {
		h, ok := javaKeyHash(s.Keys, e.k)
		if !ok {
			return entries
		}
		id := keyID(e.k)
		if i, dup := seen[id]; dup {
			uniq[i].v = e.v
			continue
		}
		seen[id] = len(uniq)
		uniq = append(uniq, e)
		hashes = append(hashes, h)
	}
	out := make([]entry, len(uniq))
	for i, j := range bucketOrder(hashes, grown(16, len(uniq))) {
		out[i] = uniq[j]
	}
	return out
}

// keyID tells equal Java keys: numbers by value (1 and 1.0 are one Double).
func keyID(k any) string {
	if n, ok := k.(json.Number); ok {
		if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
			return "i" + strconv.FormatInt(i, 10)
		}
		if f, err := strconv.ParseFloat(string(n), 64); err == nil {
			return "f" + strconv.FormatFloat(noNegativeZero(f), 'g', -1, 64)
		}
	}
	return fmt.Sprintf("%T:%v", k, k)
}

// encodeOrNull: ObjectNode.set(k, null) and ArrayNode.add(null) store a
// NullNode.
func (c *Codec) encodeOrNull(dst []byte, s *connectschema.Schema, raw []byte) ([]byte, error) {
	n := len(dst)
	dst, err := c.encode(dst, s, raw)
	if err == nil && len(dst) == n {
		dst = append(dst, "null"...)
	}
	return dst, err
}

// intRange is the range of a Connect integer type.
func intRange(t connectschema.Type) (lo, hi int64) {
	switch t {
	case connectschema.Int8:
		return math.MinInt8, math.MaxInt8
	case connectschema.Int16:
		return math.MinInt16, math.MaxInt16
	case connectschema.Int32:
		return math.MinInt32, math.MaxInt32
	}
	return math.MinInt64, math.MaxInt64
}

func appendInt(dst []byte, s *connectschema.Schema, raw []byte) ([]byte, error) {
	if !isNumber(raw) {
		return dst, mismatch(s, raw)
	}
	i, err := strconv.ParseInt(string(raw), 10, 64)
	lo, hi := intRange(s.Type)
	if err != nil || i < lo || i > hi {
		return dst, fmt.Errorf("%s is not an %s", raw, s.Type)
	}
	return strconv.AppendInt(dst, i, 10), nil
}

func isNumber(raw []byte) bool { return raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9' }

// appendFloat writes a float or double as Jackson prints the DoubleNode
// (FloatNode) fromConnectData makes of it. A value that is not finite —
// JsonConverter's strings "NaN", "Infinity" and "-Infinity" for a double
// precision or real column, or a number beyond the type's range, which
// Double.parseDouble reads as an infinity — is the JSON string of Java's
// text: Jackson's JsonGenerator.writeNumber(double) writes a non-finite
// number with writeString while QUOTE_NON_NUMERIC_NUMBERS is on, its
// default, and Jackson.newObjectMapper (the serializer's mapper) keeps it.
// Such a body does not validate against its own {"type":"number"}, as
// Confluent's does not (json.fail.invalid.schema is off by default).
func appendFloat(dst []byte, s *connectschema.Schema, raw []byte) ([]byte, error) {
	bits := 64
	if s.Type == connectschema.Float {
		bits = 32
	}
	if raw[0] == '"' {
		switch string(raw) {
		case `"NaN"`, `"Infinity"`, `"-Infinity"`:
			return append(dst, raw...), nil
		}
		return dst, mismatch(s, raw)
	}
	if !isNumber(raw) {
		return dst, mismatch(s, raw)
	}
	f, err := strconv.ParseFloat(string(raw), bits)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return dst, fmt.Errorf("%s is not a %s: %w", raw, s.Type, err)
	}
	if math.IsInf(f, 0) {
		dst = append(dst, '"')
		dst = append(dst, javaDouble(f)...)
		return append(dst, '"'), nil
	}
	if bits == 32 {
		return append(dst, javaFloat(float32(noNegativeZero(f)))...), nil
	}
	return append(dst, javaDouble(noNegativeZero(f))...), nil
}

// noNegativeZero: JsonConverter reads a JSON number as a BigDecimal, which
// has no negative zero, so -0.0 in the payload is the Connect value 0.0.
func noNegativeZero(f float64) float64 {
	if f == 0 {
		return 0
	}
	return f
}

// appendStringValue re-writes a JSON string as Jackson does; one without
// escapes in valid UTF-8 is already in Jackson's form.
func appendStringValue(dst, raw []byte) ([]byte, error) {
	if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return append(dst, raw...), nil
	}
	str, err := unquote(raw)
	if err != nil {
		return dst, err
	}
	return appendJacksonString(dst, str), nil
}

// appendBytes: JsonConverter and JsonSchemaData (decimal.format BASE64)
// both write bytes, Decimal included, as standard base64 with padding.
func appendBytes(dst []byte, s *connectschema.Schema, raw []byte) ([]byte, error) {
	if raw[0] != '"' {
		if isNumber(raw) && s.Name == decimalName {
			return dst, errors.New("a Decimal written as a number (decimal.format=NUMERIC) is not supported: JsonSchemaConverter writes base64")
		}
		return dst, mismatch(s, raw)
	}
	str, err := unquote(raw)
	if err != nil {
		return dst, err
	}
	b, err := base64.StdEncoding.DecodeString(str)
	if err != nil {
		return dst, fmt.Errorf("bytes are not base64: %w", err)
	}
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, b)
	return append(dst, '"'), nil
}

func mismatch(s *connectschema.Schema, raw []byte) error {
	return fmt.Errorf("a JSON %s for a Connect %s", jsonKind(raw), s.Type)
}

func jsonKind(raw []byte) string {
	switch {
	case raw[0] == '"':
		return "string"
	case raw[0] == '{':
		return "object"
	case raw[0] == '[':
		return "array"
	case raw[0] == 't' || raw[0] == 'f':
		return "boolean"
	case raw[0] == 'n':
		return "null"
	}
	return "number"
}
