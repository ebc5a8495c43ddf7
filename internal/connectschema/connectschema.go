// Package connectschema reads the Kafka Connect schemas that JsonConverter
// (schemas.enable=true) writes in the "schema" half of
// {"schema":…,"payload":…}: the router's output, which the schema-registry
// converters (Avro, JSON Schema) turn into their own schemas and bytes.
package connectschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Type is a Connect schema type as JsonConverter names it.
type Type string

// The Connect types.
const (
	Boolean Type = "boolean"
	Int8    Type = "int8"
	Int16   Type = "int16"
	Int32   Type = "int32"
	Int64   Type = "int64"
	Float   Type = "float"
	Double  Type = "double"
	String  Type = "string"
	Bytes   Type = "bytes"
	Array   Type = "array"
	Map     Type = "map"
	Struct  Type = "struct"
)

// Schema is one Connect schema.
type Schema struct {
	Type     Type
	Optional bool
	Name     string // "" for none
	Version  int    // 0 for none
	Doc      string
	// Parameters keep JsonConverter's order.
	Parameters []Parameter
	// Default is the default value's JSON, nil for none.
	Default json.RawMessage
	Fields  []Field // Struct
	Items   *Schema // Array
	Keys    *Schema // Map
	Values  *Schema // Map
}

// Parameter is one schema parameter.
type Parameter struct{ Key, Value string }

// Field is one struct field.
type Field struct {
	Name   string
	Schema *Schema
}

// Field returns the struct field named name, or nil.
func (s *Schema) Field(name string) *Field {
	for i := range s.Fields {
		if s.Fields[i].Name == name {
			return &s.Fields[i]
		}
	}
	return nil
}

// wire is JsonConverter's layout of a schema.
type wire struct {
	Type       Type            `json:"type"`
	Optional   bool            `json:"optional"`
	Name       string          `json:"name"`
	Version    int             `json:"version"`
	Doc        string          `json:"doc"`
	Parameters json.RawMessage `json:"parameters"`
	Default    json.RawMessage `json:"default"`
	Fields     []wire          `json:"fields"`
	Field      string          `json:"field"`
	Items      *wire           `json:"items"`
	Keys       *wire           `json:"keys"`
	Values     *wire           `json:"values"`
}

// Parse reads one schema in JsonConverter's layout.
func Parse(src []byte) (*Schema, error) {
	var w wire
	dec := json.NewDecoder(bytes.NewReader(src))
	if err := dec.Decode(&w); err != nil {
		return nil, fmt.Errorf("reading a Connect schema: %w", err)
	}
	s, err := w.schema("")
	if err != nil {
		return nil, fmt.Errorf("reading a Connect schema: %w", err)
	}
	return s, nil
}

func (w *wire) schema(path string) (*Schema, error) {
	s := &Schema{Type: w.Type, Optional: w.Optional, Name: w.Name, Version: w.Version, Doc: w.Doc}
	if len(w.Default) > 0 && string(w.Default) != "null" {
		s.Default = w.Default
	}
	params, err := parameters(w.Parameters)
	if err != nil {
		return nil, fmt.Errorf("%sparameters: %w", at(path), err)
	}
	s.Parameters = params
	switch w.Type {
	case Boolean, Int8, Int16, Int32, Int64, Float, Double, String, Bytes:
	case Struct:
		for i := range w.Fields {
			f := &w.Fields[i]
			if f.Field == "" {
				return nil, fmt.Errorf("%sfield %d has no name", at(path), i)
			}
			fs, err := f.schema(path + "." + f.Field)
			if err != nil {
				return nil, err
			}
			s.Fields = append(s.Fields, Field{Name: f.Field, Schema: fs})
		}
	case Array:
		if s.Items, err = child(w.Items, path+"[]", "items"); err != nil {
			return nil, err
		}
	case Map:
		if s.Keys, err = child(w.Keys, path+"{key}", "keys"); err != nil {
			return nil, err
		}
		if s.Values, err = child(w.Values, path+"{value}", "values"); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%sunknown type %q", at(path), w.Type)
	}
	return s, nil
}

func child(w *wire, path, what string) (*Schema, error) {
	if w == nil {
		return nil, fmt.Errorf("%shas no %s schema", at(path), what)
	}
	return w.schema(path)
}

func at(path string) string {
	if path == "" {
		return ""
	}
	return path[1:] + ": "
}

// parameters reads a parameters object keeping its order.
func parameters(raw json.RawMessage) ([]Parameter, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("not an object")
	}
	var out []Parameter
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v string
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("%v: %w", k, err)
		}
		out = append(out, Parameter{Key: k.(string), Value: v})
	}
	return out, nil
}

// SplitEnvelope returns the schema and payload halves of a JsonConverter
// record {"schema":…,"payload":…} (the router writes them in that order,
// without white space). The halves alias src.
func SplitEnvelope(src []byte) (schema, payload []byte, err error) {
	const head, mid = `{"schema":`, `,"payload":`
	if !bytes.HasPrefix(src, []byte(head)) || len(src) < len(head)+len(mid)+3 || src[len(src)-1] != '}' {
		return nil, nil, errors.New(`splitting a JsonConverter record: not {"schema":…,"payload":…}`)
	}
	end, err := skipValue(src, len(head))
	if err != nil {
		return nil, nil, fmt.Errorf("splitting a JsonConverter record: %w", err)
	}
	if !bytes.HasPrefix(src[end:], []byte(mid)) {
		return nil, nil, errors.New(`splitting a JsonConverter record: no "payload" after the schema`)
	}
	return src[len(head):end], src[end+len(mid) : len(src)-1], nil
}

// skipValue returns the index just past the JSON object or array starting
// at src[i].
func skipValue(src []byte, i int) (int, error) {
	if i >= len(src) || (src[i] != '{' && src[i] != '[') {
		return 0, errors.New("the schema is not a JSON object")
	}
	depth, inString := 0, false
	for ; i < len(src); i++ {
		c := src[i]
		switch {
		case inString:
			if c == '\\' {
				i++
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			if depth--; depth == 0 {
				return i + 1, nil
			}
		}
	}
	return 0, errors.New("the schema's JSON does not end")
}

// SplitKnown is SplitEnvelope for a record whose schema half is known to
// be schema (the previous record's, usually): a comparison of bytes, not a
// scan. It reports false when src's schema is another.
func SplitKnown(src, schema []byte) (payload []byte, ok bool) {
	const head, mid = `{"schema":`, `,"payload":`
	n := len(head) + len(schema) + len(mid)
	if len(src) <= n || src[len(src)-1] != '}' || string(src[:len(head)]) != head ||
		string(src[len(head):len(head)+len(schema)]) != string(schema) || string(src[n-len(mid):n]) != mid {
		return nil, false
	}
	return src[n : len(src)-1], true
}

// PathError names where in a payload a value did not fit its schema: the
// path of fields (".a.b"), array elements ("[2]") and map entries ("{k}")
// from the top, built on the way out of the encoders' recursion, so that a
// payload that fits costs no path.
type PathError struct {
	Path string
	Err  error
}

func (p *PathError) Error() string {
	if p.Path == "" {
		return p.Err.Error()
	}
	return strings.TrimPrefix(p.Path, ".") + ": " + p.Err.Error()
}

func (p *PathError) Unwrap() error { return p.Err }

// Within puts segment in front of err's path.
func Within(err error, segment string) error {
	var p *PathError
	if errors.As(err, &p) {
		return &PathError{Path: segment + p.Path, Err: p.Err}
	}
	return &PathError{Path: segment, Err: err}
}
