package jsonschema

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

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
func (c *Codec) Append(dst, payload []byte) ([]byte, error) {
	v, err := decode(payload)
	if err != nil {
		return dst, fmt.Errorf("encoding a JSON Schema body: reading the payload: %w", err)
	}
	if v == nil && c.defaults[c.root] == nil && !c.root.Optional {
		return dst, errors.New("encoding a JSON Schema body: the payload is null and its schema is required without a default")
	}
	out, err := c.encode(dst, c.root, v, "")
	if err != nil {
		return dst, fmt.Errorf("encoding a JSON Schema body: %w", err)
	}
	return out, nil
}

// encode is fromConnectData(schema, value) written out. A required value
// that is null without a default appends nothing (fromConnectData returns
// null and the struct leaves the field out): the caller checks len.
func (c *Codec) encode(dst []byte, s *connectschema.Schema, v any, path string) ([]byte, error) {
	if v == nil {
		if d, ok := c.defaults[s]; ok && d != nil {
			return c.encode(dst, s, d, path)
		}
		if s.Optional {
			return append(dst, "null"...), nil
		}
		return dst, nil
	}
	switch s.Type {
	case connectschema.Boolean:
		b, ok := v.(bool)
		if !ok {
			return dst, mismatch(path, s, v)
		}
		return strconv.AppendBool(dst, b), nil
	case connectschema.Int8, connectschema.Int16, connectschema.Int32, connectschema.Int64:
		return appendInt(dst, s, v, path)
	case connectschema.Float, connectschema.Double:
		return appendFloat(dst, s, v, path)
	case connectschema.String:
		str, ok := v.(string)
		if !ok {
			return dst, mismatch(path, s, v)
		}
		return appendJacksonString(dst, str), nil
	case connectschema.Bytes:
		return appendBytes(dst, s, v, path)
	case connectschema.Array:
		items, ok := v.([]any)
		if !ok {
			return dst, mismatch(path, s, v)
		}
		dst = append(dst, '[')
		for i, it := range items {
			if i > 0 {
				dst = append(dst, ',')
			}
			n := len(dst)
			var err error
			if dst, err = c.encode(dst, s.Items, it, path+"["+strconv.Itoa(i)+"]"); err != nil {
				return dst, err
			}
			if len(dst) == n { // ArrayNode.add(null) adds a NullNode
				dst = append(dst, "null"...)
			}
		}
		return append(dst, ']'), nil
	case connectschema.Map:
		return c.appendMap(dst, s, v, path)
	case connectschema.Struct:
		return c.appendStruct(dst, s, v, path)
	}
	return dst, fmt.Errorf("%sunknown type %q", at(path), s.Type)
}

func (c *Codec) appendStruct(dst []byte, s *connectschema.Schema, v any, path string) ([]byte, error) {
	o, ok := v.(*object)
	if !ok {
		return dst, mismatch(path, s, v)
	}
	dst = append(dst, '{')
	first := true
	for _, f := range s.Fields {
		mark := len(dst)
		if !first {
			dst = append(dst, ',')
		}
		dst = appendJacksonString(dst, f.Name)
		dst = append(dst, ':')
		n := len(dst)
		var err error
		if dst, err = c.encode(dst, f.Schema, o.vals[f.Name], path+"."+f.Name); err != nil {
			return dst, err
		}
		if len(dst) == n { // a required field without value: left out
			dst = dst[:mark]
			continue
		}
		first = false
	}
	return append(dst, '}'), nil
}

// appendMap: JsonConverter writes a map with string keys as an object and
// any other as [[key,value],…]; JsonSchemaData writes an object only when
// the keys are required strings, else [{"key":…,"value":…},…].
func (c *Codec) appendMap(dst []byte, s *connectschema.Schema, v any, path string) ([]byte, error) {
	var entries []entry
	switch m := v.(type) {
	case *object:
		for _, k := range m.keys {
			entries = append(entries, entry{k, m.vals[k]})
		}
	case []any:
		// [key,value] as JsonConverter writes it, or {"key":…,"value":…}
		// as JsonSchemaData does (so that a body re-encodes to itself).
		for i, e := range m {
			if pair, ok := e.([]any); ok && len(pair) == 2 {
				entries = append(entries, entry{pair[0], pair[1]})
				continue
			}
			if obj, ok := e.(*object); ok && len(obj.keys) == 2 {
				if k, hasK := obj.vals["key"]; hasK {
					if v, hasV := obj.vals["value"]; hasV {
						entries = append(entries, entry{k, v})
						continue
					}
				}
			}
			return dst, fmt.Errorf("%sentry %d is not a [key,value] pair", at(path), i)
		}
	default:
		return dst, mismatch(path, s, v)
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
				return dst, fmt.Errorf("%sa key is not a string", at(path))
			}
			dst = appendJacksonString(dst, k)
			dst = append(dst, ':')
			var err error
			if dst, err = c.encodeOrNull(dst, s.Values, e.v, path+"{"+k+"}"); err != nil {
				return dst, err
			}
			continue
		}
		dst = append(dst, `{"key":`...)
		var err error
		if dst, err = c.encodeOrNull(dst, s.Keys, e.k, path+"{key}"); err != nil {
			return dst, err
		}
		dst = append(dst, `,"value":`...)
		if dst, err = c.encodeOrNull(dst, s.Values, e.v, path+"{value}"); err != nil {
			return dst, err
		}
		dst = append(dst, '}')
	}
	if objectMode {
		return append(dst, '}'), nil
	}
	return append(dst, ']'), nil
}

// entry is one map entry.
type entry struct{ k, v any }

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

// encodeOrNull: ObjectNode.set(k, null) stores a NullNode.
func (c *Codec) encodeOrNull(dst []byte, s *connectschema.Schema, v any, path string) ([]byte, error) {
	n := len(dst)
	dst, err := c.encode(dst, s, v, path)
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

func appendInt(dst []byte, s *connectschema.Schema, v any, path string) ([]byte, error) {
	num, ok := v.(json.Number)
	if !ok {
		return dst, mismatch(path, s, v)
	}
	i, err := strconv.ParseInt(string(num), 10, 64)
	lo, hi := intRange(s.Type)
	if err != nil || i < lo || i > hi {
		return dst, fmt.Errorf("%s%s is not an %s", at(path), num, s.Type)
	}
	return strconv.AppendInt(dst, i, 10), nil
}

func appendFloat(dst []byte, s *connectschema.Schema, v any, path string) ([]byte, error) {
	num, ok := v.(json.Number)
	if !ok {
		return dst, mismatch(path, s, v)
	}
	if s.Type == connectschema.Float {
		f, err := strconv.ParseFloat(string(num), 32)
		if err != nil {
			return dst, fmt.Errorf("%s%s is not a float: %w", at(path), num, err)
		}
		return append(dst, javaFloat(float32(noNegativeZero(f)))...), nil
	}
	f, err := strconv.ParseFloat(string(num), 64)
	if err != nil {
		return dst, fmt.Errorf("%s%s is not a double: %w", at(path), num, err)
	}
	return append(dst, javaDouble(noNegativeZero(f))...), nil
}

// appendBytes: JsonConverter and JsonSchemaData (decimal.format BASE64)
// both write bytes, Decimal included, as standard base64 with padding.
func appendBytes(dst []byte, s *connectschema.Schema, v any, path string) ([]byte, error) {
	str, ok := v.(string)
	if !ok {
		if _, isNum := v.(json.Number); isNum && s.Name == decimalName {
			return dst, fmt.Errorf("%sa Decimal written as a number (decimal.format=NUMERIC) is not supported: JsonSchemaConverter writes base64", at(path))
		}
		return dst, mismatch(path, s, v)
	}
	raw, err := base64.StdEncoding.DecodeString(str)
	if err != nil {
		return dst, fmt.Errorf("%sbytes are not base64: %w", at(path), err)
	}
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, raw)
	return append(dst, '"'), nil
}

func mismatch(path string, s *connectschema.Schema, v any) error {
	return fmt.Errorf("%sa JSON %s for a Connect %s", at(path), jsonKind(v), s.Type)
}

func jsonKind(v any) string {
	switch v.(type) {
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "null"
}

// noNegativeZero: JsonConverter reads a JSON number as a BigDecimal, which
// has no negative zero, so -0.0 in the payload is the Connect value 0.0.
func noNegativeZero(f float64) float64 {
	if f == 0 {
		return 0
	}
	return f
}
