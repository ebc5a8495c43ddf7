package router

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"unicode/utf8"
)

// connectSchema is a Kafka Connect schema as JsonConverter writes it in the
// "schema" half of {"schema":…,"payload":…}.
type connectSchema struct {
	typ      string // boolean, int16, int32, int64, float, double, string, bytes, array, struct
	optional bool
	name     string
	version  int // 0 = none
	fields   []schemaField
	items    *connectSchema
	// memo, when set, is appendSchema's output for the schema at the top
	// (no "field"): the shape cache's schemas keep it.
	memo []byte
}

type schemaField struct {
	name   string
	schema *connectSchema
}

// columnSchema is the schema Debezium's PostgreSQL connector gives a
// column of the type.
func columnSchema(oid uint32, optional bool, decimalMode string) *connectSchema {
	s := &connectSchema{typ: "string", optional: optional}
	switch oid {
	case oidBool:
		s.typ = "boolean"
	case oidInt2:
		s.typ = "int16"
	case oidInt4:
		s.typ = "int32"
	case oidInt8, oidOID:
		s.typ = "int64"
	case oidFloat4:
		s.typ = "float"
	case oidFloat8:
		s.typ = "double"
	case oidNumeric:
		if decimalMode == "double" {
			s.typ = "double"
		}
	case oidBytea:
		s.typ = "bytes"
	case oidUUID:
		s.name, s.version = "io.debezium.data.Uuid", 1
	case oidJSON, oidJSONB:
		s.name, s.version = "io.debezium.data.Json", 1
	case oidXML:
		s.name, s.version = "io.debezium.data.Xml", 1
	}
	return s
}

// appendSchema appends s in JsonConverter's layout: type, the struct fields
// or array items, optional, name, version, and "field" last when the schema
// is a struct field.
func appendSchema(dst []byte, s *connectSchema, field string) []byte {
	if field == "" && s.memo != nil {
		return append(dst, s.memo...)
	}
	dst = append(dst, `{"type":"`...)
	dst = append(dst, s.typ...)
	dst = append(dst, '"')
	switch s.typ {
	case "struct":
		dst = append(dst, `,"fields":[`...)
		for i, f := range s.fields {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendSchema(dst, f.schema, f.name)
		}
		dst = append(dst, ']')
	case "array":
		dst = append(dst, `,"items":`...)
		dst = appendSchema(dst, s.items, "")
	}
	dst = append(dst, `,"optional":`...)
	dst = strconv.AppendBool(dst, s.optional)
	if s.name != "" {
		dst = append(dst, `,"name":`...)
		dst = AppendJSONString(dst, s.name)
	}
	if s.version != 0 {
		dst = append(dst, `,"version":`...)
		dst = strconv.AppendInt(dst, int64(s.version), 10)
	}
	if field != "" {
		dst = append(dst, `,"field":`...)
		dst = AppendJSONString(dst, field)
	}
	return append(dst, '}')
}

// jsonNode is a parsed JSON value with object keys in document order,
// which a Go map would lose.
type jsonNode struct {
	kind   byte // '{', '[', '"', 'n' (number), 'b' (boolean), '0' (null)
	number string
	keys   []string
	elems  []jsonNode
}

// parseJSONTree parses one JSON value (the payload the router compacted)
// into a jsonNode tree. It is the schema inference's parser, a hand-written
// scanner: encoding/json's Decoder.Token cost more than everything else a
// registry converter does per record.
func parseJSONTree(src []byte) (jsonNode, error) {
	p := treeParser{src: src}
	n, err := p.value(0)
	if err != nil {
		return n, err
	}
	if p.skipSpace(); p.i != len(src) {
		return n, errors.New("trailing data after the JSON value")
	}
	return n, nil
}

// treeParser scans src from i.
type treeParser struct {
	src []byte
	i   int
}

// maxTreeDepth is encoding/json's nesting limit.
const maxTreeDepth = 10000

func (p *treeParser) skipSpace() {
	for p.i < len(p.src) {
		switch p.src[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *treeParser) fail(what string) error {
	return fmt.Errorf("invalid JSON at byte %d: %s", p.i, what)
}

func (p *treeParser) value(depth int) (jsonNode, error) {
	if depth > maxTreeDepth {
		return jsonNode{}, p.fail("nested too deeply")
	}
	p.skipSpace()
	if p.i >= len(p.src) {
		return jsonNode{}, io.ErrUnexpectedEOF
	}
	switch c := p.src[p.i]; {
	case c == '{' || c == '[':
		return p.container(c, depth)
	case c == '"':
		_, err := p.str()
		return jsonNode{kind: '"'}, err
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	}
	for _, lit := range []struct {
		text string
		kind byte
	}{{"true", 'b'}, {"false", 'b'}, {"null", '0'}} {
		if bytes.HasPrefix(p.src[p.i:], []byte(lit.text)) {
			p.i += len(lit.text)
			return jsonNode{kind: lit.kind}, nil
		}
	}
	return jsonNode{}, p.fail("not a JSON value")
}

func (p *treeParser) container(open byte, depth int) (jsonNode, error) {
	n := jsonNode{kind: open}
	closing := byte(']')
	if open == '{' {
		closing = '}'
	}
	p.i++
	for first := true; ; first = false {
		p.skipSpace()
		if p.i < len(p.src) && p.src[p.i] == closing && first {
			p.i++
			return n, nil
		}
		if open == '{' {
			if p.i >= len(p.src) || p.src[p.i] != '"' {
				return n, p.fail("want an object key")
			}
			key, err := p.str()
			if err != nil {
				return n, err
			}
			if p.skipSpace(); p.i >= len(p.src) || p.src[p.i] != ':' {
				return n, p.fail("want ':' after an object key")
			}
			p.i++
			n.keys = append(n.keys, key)
		}
		e, err := p.value(depth + 1)
		if err != nil {
			return n, err
		}
		n.elems = append(n.elems, e)
		p.skipSpace()
		if p.i >= len(p.src) {
			return n, io.ErrUnexpectedEOF
		}
		switch p.src[p.i] {
		case ',':
			p.i++
		case closing:
			p.i++
			return n, nil
		default:
			return n, p.fail("want ',' or the container's end")
		}
	}
}

// str reads a string at p.i and returns its value; strings of valid UTF-8
// without escapes are copied as they are, others decoded by encoding/json
// (invalid UTF-8 becomes U+FFFD there).
func (p *treeParser) str() (string, error) {
	start, escaped := p.i, false
	for p.i++; p.i < len(p.src); p.i++ {
		switch c := p.src[p.i]; {
		case c == '\\':
			escaped = true
			p.i++
		case c == '"':
			p.i++
			raw := p.src[start:p.i]
			if !escaped && utf8.Valid(raw) {
				return string(raw[1 : len(raw)-1]), nil
			}
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return "", fmt.Errorf("invalid JSON string at byte %d: %w", start, err)
			}
			return s, nil
		case c < 0x20:
			return "", p.fail("a control character in a string")
		}
	}
	return "", io.ErrUnexpectedEOF
}

func (p *treeParser) number() (jsonNode, error) {
	start := p.i
	for p.i < len(p.src) {
		c := p.src[p.i]
		if c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			p.i++
			continue
		}
		break
	}
	lit := string(p.src[start:p.i])
	if !json.Valid([]byte(lit)) {
		return jsonNode{}, fmt.Errorf("invalid JSON number %q at byte %d", lit, start)
	}
	return jsonNode{kind: 'n', number: lit}, nil
}

// schemaInference reproduces Debezium's JsonSchemaData.toConnectSchema,
// which infers the Connect schema of an expanded payload.
type schemaInference struct {
	nullAsBytes    bool // table.json.payload.null.behavior=optional_bytes
	emptyAsStrings bool // table.json.payload.empty.array.behavior=optional_string
}

// infer returns the schema of n, or nil when Debezium leaves the field out
// (a null, an empty array, unless their behavior options give them one). name is the struct name for objects: the
// payload column's name, then "<parent>.<field>" below it.
func (in schemaInference) infer(name string, n jsonNode) (*connectSchema, error) {
	switch n.kind {
	case '"':
		return &connectSchema{typ: "string", optional: true}, nil
	case 'b':
		return &connectSchema{typ: "boolean", optional: true}, nil
	case 'n':
		return &connectSchema{typ: numberType(n.number), optional: true}, nil
	case '[':
		if len(n.elems) == 0 {
			if in.emptyAsStrings {
				return &connectSchema{typ: "array", optional: true, items: &connectSchema{typ: "string", optional: true}}, nil
			}
			return nil, nil
		}
		items, err := in.arrayItems(name, n)
		if err != nil {
			return nil, err
		}
		return &connectSchema{typ: "array", optional: true, items: items}, nil
	case '{':
		s := &connectSchema{typ: "struct", optional: true, name: name}
		for _, m := range n.members() {
			key := n.keys[m.first]
			fieldName := key
			if name != "" {
				fieldName = name + "." + key
			}
			fs, err := in.infer(fieldName, n.elems[m.last])
			if err != nil {
				return nil, err
			}
			if fs != nil {
				s.fields = append(s.fields, schemaField{name: key, schema: fs})
			}
		}
		return s, nil
	}
	if in.nullAsBytes {
		return &connectSchema{typ: "bytes", optional: true}, nil
	}
	return nil, nil
}

// keySpan is one distinct key of an object: where it first appears and
// where its last value is.
type keySpan struct{ first, last int }

// members lists an object's distinct keys as Jackson's readTree keeps
// them (ObjectNode over a LinkedHashMap; JsonNodeDeserializer replaces a
// repeated key's value with ObjectNode.replace): in the order of their
// first appearance, each with its last value. encoding/json's Unmarshal
// also keeps the last value.
func (n *jsonNode) members() []keySpan {
	out := make([]keySpan, 0, len(n.keys))
	if len(n.keys) <= 16 {
		for i, k := range n.keys {
			j := 0
			for j < len(out) && n.keys[out[j].first] != k {
				j++
			}
			if j == len(out) {
				out = append(out, keySpan{i, i})
			} else {
				out[j].last = i
			}
		}
		return out
	}
	at := make(map[string]int, len(n.keys))
	for i, k := range n.keys {
		if j, ok := at[k]; ok {
			out[j].last = i
			continue
		}
		at[k] = len(out)
		out = append(out, keySpan{i, i})
	}
	return out
}

// numberType is the Connect type of a JSON number as Jackson reads it: an
// integer literal that fits in 32 bits is int32, in 64 bits int64,
// anything else (fractions, exponents, larger integers) double.
func numberType(lit string) string {
	for i := 0; i < len(lit); i++ {
		if c := lit[i]; c == '.' || c == 'e' || c == 'E' {
			return "double"
		}
	}
	v, err := strconv.ParseInt(lit, 10, 64)
	switch {
	case err != nil:
		return "double"
	case v >= -1<<31 && v < 1<<31:
		return "int32"
	}
	return "int64"
}

// arrayItems is toConnectSchemaWithCycles: elements must share one JSON
// type (and one number type); null elements are skipped; the schemas of
// object elements are merged field by field.
func (in schemaInference) arrayItems(name string, n jsonNode) (*connectSchema, error) {
	var sample *jsonNode
	sampleType := ""
	for i := range n.elems {
		e := &n.elems[i]
		if e.kind == '0' {
			continue
		}
		if sample == nil {
			sample = e
		}
		if e.kind != sample.kind {
			return nil, fmt.Errorf("array %s mixes JSON types", name)
		}
		if e.kind == 'n' {
			if sampleType == "" {
				sampleType = numberType(sample.number)
			}
			if numberType(e.number) != sampleType {
				return nil, fmt.Errorf("array %s mixes number types", name)
			}
		}
	}
	if sample == nil || sample.kind != '{' {
		var s *connectSchema
		var err error
		if sample != nil {
			s, err = in.infer("", *sample)
		} else {
			s, err = in.infer("", jsonNode{kind: '0'})
		}
		if err == nil && s == nil {
			err = fmt.Errorf("array %s has no element with a schema", name)
		}
		return s, err
	}
	// Debezium merges the distinct element schemas in a HashSet's order;
	// first appearance is the deterministic stand-in.
	var merged *connectSchema
	var distinct []*connectSchema
	for i := range n.elems {
		if n.elems[i].kind != '{' {
			continue
		}
		s, err := in.infer(name, n.elems[i])
		if err != nil {
			return nil, err
		}
		if containsSchema(distinct, s) {
			continue
		}
		distinct = append(distinct, s)
		merged = mergeSchemas(merged, s)
	}
	return merged, nil
}

func containsSchema(list []*connectSchema, s *connectSchema) bool {
	for _, l := range list {
		if reflect.DeepEqual(l, s) {
			return true
		}
	}
	return false
}

// mergeSchemas adds right's new fields to left's; a field already present
// keeps its schema unless that was the bytes stand-in for null.
func mergeSchemas(left, right *connectSchema) *connectSchema {
	if left == nil {
		return right
	}
	out := &connectSchema{typ: left.typ, optional: left.optional, name: left.name, version: left.version}
	out.fields = append(out.fields, left.fields...)
	for _, f := range right.fields {
		i := out.fieldIndex(f.name)
		switch {
		case i < 0:
			out.fields = append(out.fields, f)
		case out.fields[i].schema.typ == "bytes" && f.schema.typ != "bytes":
			out.fields[i] = f
		}
	}
	return out
}

func (s *connectSchema) fieldIndex(name string) int {
	for i, f := range s.fields {
		if f.name == name {
			return i
		}
	}
	return -1
}
