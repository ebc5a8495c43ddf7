// Package jsonschema converts the Kafka Connect schemas the router writes
// into the JSON Schema that Confluent's JsonSchemaConverter registers, and
// a record's payload into the JSON body it writes after the wire-format
// header. It follows JsonSchemaData.fromConnectSchema / fromConnectData of
// confluentinc/schema-registry (json-schema-converter) with the converter's
// defaults, and the key order everit-json-schema prints; the rules and their
// sources are listed in DESIGN.md's registry section and in the tests. Pure:
// no I/O.
package jsonschema

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/outboxrelay/outboxrelay/internal/connectschema"
)

// Codec is one compiled Connect schema.
type Codec struct {
	root   *connectschema.Schema
	schema string
	name   string
	// defaults holds each schema's default body, encoded once.
	defaults map[*connectschema.Schema][]byte
	// fields maps each struct schema's field names to their index.
	fields map[*connectschema.Schema]map[string]int
}

// Compile converts a Connect schema as JsonSchemaData.fromConnectSchema
// does with the JsonSchemaConverter defaults.
func Compile(s *connectschema.Schema) (*Codec, error) {
	c := &Codec{root: s, defaults: map[*connectschema.Schema][]byte{}, fields: map[*connectschema.Schema]map[string]int{}}
	k, err := c.convert(s, -1, "")
	if err != nil {
		return nil, fmt.Errorf("converting a Connect schema to JSON Schema: %w", err)
	}
	c.schema = string(k.render())
	if k.kind != kindOneOf {
		c.name = s.Name
	}
	return c, nil
}

// Schema is the schema text registered with the registry.
func (c *Codec) Schema() string { return c.schema }

// Name is what Confluent's JsonSchema.name() returns, the top level's
// "title": the Connect name of a required schema, "" for an optional one
// (its top level is a oneOf without a title) or an unnamed one.
func (c *Codec) Name() string { return c.name }

// Names of JsonSchemaData (JsonSchemaData.java's constants).
const (
	namespace     = "io.confluent.connect.json"
	jsonTypeOneOf = namespace + ".OneOf"
	jsonTypeEnum  = namespace + ".Enum"
	connectUnion  = "org.apache.kafka.connect.data.Union" // ConnectUnion.LOGICAL_PARAMETER
	connectEnum   = "org.apache.kafka.connect.data.Enum"  // ConnectEnum.LOGICAL_PARAMETER
	decimalName   = "org.apache.kafka.connect.data.Decimal"
)

type kind int

const (
	kindNumber kind = iota
	kindString
	kindBoolean
	kindArray
	kindObject
	kindOneOf
	kindNull
)

// node is one everit schema about to be printed.
type node struct {
	kind    kind
	typ     string // "integer"/"number" for kindNumber
	title   string
	hasDoc  bool
	doc     string
	def     []byte // default, printed
	unproc  []prop // the builder's HashMap, in insertion order
	items   *node
	addl    *node // map values (additionalProperties)
	props   []named
	subs    []*node
	hasProp bool
}

type prop struct {
	key string
	val []byte
}

type named struct {
	name string
	n    *node
}

// convert is JsonSchemaData.rawSchemaFromConnectSchema(ctx, schema, index).
func (c *Codec) convert(s *connectschema.Schema, index int, path string) (*node, error) {
	if err := unsupported(s, path); err != nil {
		return nil, err
	}
	n := &node{}
	switch s.Type {
	case connectschema.Int8, connectschema.Int16, connectschema.Int32, connectschema.Int64:
		n.kind, n.typ = kindNumber, "integer"
		n.unproc = append(n.unproc, prop{"connect.type", quote(string(s.Type))})
	case connectschema.Float, connectschema.Double:
		n.kind, n.typ = kindNumber, "number"
		n.unproc = append(n.unproc, prop{"connect.type", quote(map[connectschema.Type]string{connectschema.Float: "float32", connectschema.Double: "float64"}[s.Type])})
	case connectschema.Boolean:
		n.kind = kindBoolean
	case connectschema.String:
		n.kind = kindString
	case connectschema.Bytes:
		// decimal.format defaults to BASE64: a Decimal is a string too.
		n.kind = kindString
		n.unproc = append(n.unproc, prop{"connect.type", quote("bytes")})
	case connectschema.Array:
		items, err := c.convert(s.Items, -1, path+"[]")
		if err != nil {
			return nil, err
		}
		n.kind, n.items = kindArray, items
	case connectschema.Map:
		if err := c.convertMap(n, s, path); err != nil {
			return nil, err
		}
	case connectschema.Struct:
		if s.Optional {
			return c.optionalStruct(s, index, path)
		}
		if err := c.convertStruct(n, s, path); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%sunknown type %q", at(path), s.Type)
	}
	if err := c.annotate(n, s, path); err != nil {
		return nil, err
	}
	if s.Optional {
		n = &node{kind: kindOneOf, subs: []*node{{kind: kindNull}, n}}
	}
	if index >= 0 {
		n.unproc = append(n.unproc, prop{"connect.index", []byte(strconv.Itoa(index))})
	}
	return n, nil
}

// unsupported names the JsonSchemaData features the router never produces.
func unsupported(s *connectschema.Schema, path string) error {
	if s.Name == jsonTypeOneOf {
		return fmt.Errorf("%sthe union %s is not supported", at(path), s.Name)
	}
	for _, p := range s.Parameters {
		switch {
		case p.Key == connectUnion, p.Key == namespace+".Id",
			strings.HasPrefix(p.Key, connectEnum), strings.HasPrefix(p.Key, jsonTypeEnum):
			return fmt.Errorf("%sthe parameter %s (a union, enum or $id of JsonSchemaData) is not supported", at(path), p.Key)
		}
	}
	return nil
}

// convertMap: a map with required string keys is an object whose
// additionalProperties are the values; any other map an array of
// {"key":…,"value":…} objects (connect.index 0 and 1).
func (c *Codec) convertMap(n *node, s *connectschema.Schema, path string) error {
	n.unproc = append(n.unproc, prop{"connect.type", quote("map")})
	if s.Keys.Type == connectschema.String && !s.Keys.Optional {
		v, err := c.convert(s.Values, -1, path+"{value}")
		if err != nil {
			return err
		}
		n.kind, n.addl = kindObject, v
		return nil
	}
	k, err := c.convert(s.Keys, 0, path+"{key}")
	if err != nil {
		return err
	}
	v, err := c.convert(s.Values, 1, path+"{value}")
	if err != nil {
		return err
	}
	entry := &node{kind: kindObject, hasProp: true}
	entry.props = hashOrderNamed([]named{{"key", k}, {"value", v}})
	n.kind, n.items = kindArray, entry
	return nil
}

func (c *Codec) convertStruct(n *node, s *connectschema.Schema, path string) error {
	n.kind, n.hasProp = kindObject, true
	index := make(map[string]int, len(s.Fields))
	for i, f := range s.Fields {
		index[f.Name] = i
	}
	c.fields[s] = index
	var props []named
	for i, f := range s.Fields {
		fn, err := c.convert(f.Schema, i, path+"."+f.Name)
		if err != nil {
			return err
		}
		props = append(props, named{f.Name, fn})
	}
	n.props = hashOrderNamed(props)
	return nil
}

// optionalStruct: {"oneOf":[{"type":"null"},<the struct, required>]}, the
// connect.index on the oneOf, the title and the rest on the struct.
func (c *Codec) optionalStruct(s *connectschema.Schema, index int, path string) (*node, error) {
	req := *s
	req.Optional = false
	inner, err := c.convert(&req, -1, path)
	if err != nil {
		return nil, err
	}
	c.defaults[s] = c.defaults[&req]
	c.fields[s] = c.fields[&req]
	n := &node{kind: kindOneOf, subs: []*node{{kind: kindNull}, inner}}
	if index >= 0 {
		n.unproc = append(n.unproc, prop{"connect.index", []byte(strconv.Itoa(index))})
	}
	return n, nil
}

// annotate sets what JsonSchemaData sets on a non-combined builder: the
// title (the Connect name), connect.version, the description (doc),
// connect.parameters (less those of JsonSchemaData's namespace) and the
// default.
func (c *Codec) annotate(n *node, s *connectschema.Schema, path string) error {
	n.title = s.Name
	if s.Version != 0 {
		n.unproc = append(n.unproc, prop{"connect.version", []byte(strconv.Itoa(s.Version))})
	}
	if s.Doc != "" {
		n.hasDoc, n.doc = true, s.Doc
	}
	var keys []string
	vals := map[string]string{}
	for _, p := range s.Parameters {
		if strings.HasPrefix(p.Key, namespace) {
			continue
		}
		if _, dup := vals[p.Key]; !dup {
			keys = append(keys, p.Key)
		}
		vals[p.Key] = p.Value
	}
	if len(keys) > 0 {
		// Collectors.toMap builds a HashMap; org.json prints it through
		// new JSONObject(map), another HashMap sized for it.
		obj := []byte{'{'}
		for i, k := range hashMapSized(newHashMapPut(keys)) {
			if i > 0 {
				obj = append(obj, ',')
			}
			obj = appendJacksonString(obj, k)
			obj = append(obj, ':')
			obj = appendJacksonString(obj, vals[k])
		}
		n.unproc = append(n.unproc, prop{"connect.parameters", append(obj, '}')})
	}
	if s.Default != nil {
		if !json.Valid(s.Default) {
			return fmt.Errorf("%sdefault: not JSON", at(path))
		}
		body, err := c.encode(nil, s, s.Default)
		if err != nil {
			return fmt.Errorf("%sdefault: %w", at(path), err)
		}
		c.defaults[s] = body
		if n.def, err = schemaValue(body); err != nil {
			return fmt.Errorf("%sdefault: %w", at(path), err)
		}
	}
	return nil
}

func hashOrderNamed(in []named) []named {
	keys := make([]string, len(in))
	byName := map[string]*node{}
	for i, p := range in {
		keys[i] = p.name
		byName[p.name] = p.n
	}
	var out []named
	for _, k := range newHashMapPut(keys) {
		out = append(out, named{k, byName[k]})
	}
	return out
}

// render prints n as everit's ToStringVisitor does and Jackson re-writes
// it: compact, keys in the visitor's order.
func (n *node) render() []byte {
	w := &printer{b: []byte{'{'}, first: true}
	switch n.kind {
	case kindNumber:
		w.raw("type", quote(n.typ))
		w.common(n)
	case kindString:
		w.raw("type", []byte(`"string"`))
		w.common(n)
	case kindBoolean:
		w.common(n)
		w.raw("type", []byte(`"boolean"`))
	case kindArray:
		w.raw("type", []byte(`"array"`))
		w.common(n)
		w.raw("items", n.items.render())
	case kindObject:
		w.raw("type", []byte(`"object"`))
		w.common(n)
		if n.addl != nil {
			w.raw("additionalProperties", n.addl.render())
		}
		if len(n.props) > 0 {
			props := []byte{'{'}
			for i, p := range n.props {
				if i > 0 {
					props = append(props, ',')
				}
				props = appendJacksonString(props, p.name)
				props = append(props, ':')
				props = append(props, p.n.render()...)
			}
			w.raw("properties", append(props, '}'))
		}
	case kindOneOf:
		w.common(n)
		subs := []byte{'['}
		for i, s := range n.subs {
			if i > 0 {
				subs = append(subs, ',')
			}
			subs = append(subs, s.render()...)
		}
		w.raw("oneOf", append(subs, ']'))
	case kindNull:
		w.raw("type", []byte(`"null"`))
	}
	return append(w.b, '}')
}

// printer writes one JSON object's members.
type printer struct {
	b     []byte
	first bool
}

func (w *printer) raw(key string, val []byte) {
	if !w.first {
		w.b = append(w.b, ',')
	}
	w.first = false
	w.b = appendJacksonString(w.b, key)
	w.b = append(w.b, ':')
	w.b = append(w.b, val...)
}

// common is ToStringVisitor.visitSchema: title, description, default,
// then the unprocessed properties (the builder's HashMap, copied by
// everit's Schema constructor).
func (w *printer) common(n *node) {
	if n.title != "" {
		w.raw("title", quote(n.title))
	}
	if n.hasDoc {
		w.raw("description", quote(n.doc))
	}
	if n.def != nil {
		w.raw("default", n.def)
	}
	keys := make([]string, len(n.unproc))
	vals := map[string][]byte{}
	for i, p := range n.unproc {
		keys[i] = p.key
		vals[p.key] = p.val
	}
	for _, k := range hashMapCopy(newHashMapPut(keys)) {
		w.raw(k, vals[k])
	}
}

func quote(s string) []byte { return appendJacksonString(nil, s) }

func at(path string) string {
	if path == "" {
		return ""
	}
	return strings.TrimPrefix(path, ".") + ": "
}
