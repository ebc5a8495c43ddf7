package avro

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/outboxrelay/outboxrelay/internal/connectschema"
)

// jval is a parsed JSON value keeping object keys in order.
type jval struct {
	kind  byte   // '{', '[', '"', 'n' (number), 't', 'f', '0' (null)
	text  string // a string's value, a number's literal
	keys  []string
	elems []jval
}

func parseTree(src []byte) (jval, error) {
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.UseNumber()
	v, err := readTree(dec)
	if err != nil {
		return v, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return v, errors.New("trailing data after the JSON value")
	}
	return v, nil
}

func readTree(dec *json.Decoder) (jval, error) {
	tok, err := dec.Token()
	if err != nil {
		return jval{}, err
	}
	switch t := tok.(type) {
	case json.Delim:
		v := jval{kind: byte(t)}
		for dec.More() {
			if t == '{' {
				k, err := dec.Token()
				if err != nil {
					return v, err
				}
				v.keys = append(v.keys, k.(string))
			}
			e, err := readTree(dec)
			if err != nil {
				return v, err
			}
			v.elems = append(v.elems, e)
		}
		_, err := dec.Token()
		return v, err
	case string:
		return jval{kind: '"', text: t}, nil
	case json.Number:
		return jval{kind: 'n', text: string(t)}, nil
	case bool:
		if t {
			return jval{kind: 't'}, nil
		}
		return jval{kind: 'f'}, nil
	}
	return jval{kind: '0'}, nil
}

// get is the value of key, the last one when it appears twice (Jackson's
// readTree keeps the last).
func (v jval) get(key string) (jval, bool) {
	for i := len(v.keys) - 1; i >= 0; i-- {
		if v.keys[i] == key {
			return v.elems[i], true
		}
	}
	return jval{kind: '0'}, false
}

func (v jval) integral() bool {
	return v.kind == 'n' && !bytes.ContainsAny([]byte(v.text), ".eE")
}

// convertDefault is AvroData.defaultValueFromConnect: the Avro default of
// a Connect default given in JsonConverter's layout. It returns that
// layout compacted (what the encoder reads) and the Avro default.
func convertDefault(s *connectschema.Schema, raw []byte, path string) (connect, avro []byte, err error) {
	v, err := parseTree(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("%sthe default %s: %w", at(path), raw, err)
	}
	var c bytes.Buffer
	if err := json.Compact(&c, raw); err != nil {
		return nil, nil, fmt.Errorf("%sthe default %s: %w", at(path), raw, err)
	}
	avro, err = appendDefault(nil, s, v)
	if err != nil {
		return nil, nil, fmt.Errorf("%sthe default %s: %w", at(path), raw, err)
	}
	return c.Bytes(), avro, nil
}

func appendDefault(dst []byte, s *connectschema.Schema, v jval) ([]byte, error) {
	if v.kind == '0' {
		return append(dst, "null"...), nil
	}
	want := map[connectschema.Type]byte{
		connectschema.Int8: 'n', connectschema.Int16: 'n', connectschema.Int32: 'n', connectschema.Int64: 'n',
		connectschema.Float: 'n', connectschema.Double: 'n', connectschema.String: '"', connectschema.Bytes: '"',
		connectschema.Array: '[', connectschema.Struct: '{',
	}[s.Type]
	switch {
	case s.Type == connectschema.Boolean:
		if v.kind != 't' && v.kind != 'f' {
			return nil, fmt.Errorf("not a boolean")
		}
		return append(dst, map[byte]string{'t': "true", 'f': "false"}[v.kind]...), nil
	case s.Type == connectschema.Map:
		return appendMapDefault(dst, s, v)
	case v.kind != want:
		return nil, fmt.Errorf("not a JSON value of a %s schema", s.Type)
	}
	switch s.Type {
	case connectschema.Int8, connectschema.Int16, connectschema.Int32, connectschema.Int64:
		if !v.integral() {
			return nil, fmt.Errorf("%s is not an integer", v.text)
		}
		return append(dst, v.text...), nil
	case connectschema.Float, connectschema.Double:
		return append(dst, v.text...), nil
	case connectschema.String:
		return appendJSONString(dst, v.text), nil
	case connectschema.Bytes:
		b, err := base64.StdEncoding.DecodeString(v.text)
		if err != nil {
			return nil, fmt.Errorf("bytes not in base64: %w", err)
		}
		return appendJSONString(dst, latin1(b)), nil
	case connectschema.Array:
		dst = append(dst, '[')
		for i, e := range v.elems {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendDefault(dst, s.Items, e); err != nil {
				return nil, err
			}
		}
		return append(dst, ']'), nil
	}
	// Struct: its fields in order; a missing one takes its own default
	// (Struct.get).
	dst = append(dst, '{')
	for i, f := range s.Fields {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, f.Name)
		dst = append(dst, ':')
		e, ok := v.get(f.Name)
		if (!ok || e.kind == '0') && f.Schema.Default != nil {
			var err error
			if e, err = parseTree(f.Schema.Default); err != nil {
				return nil, err
			}
		}
		var err error
		if dst, err = appendDefault(dst, f.Schema, e); err != nil {
			return nil, fmt.Errorf("%s: %w", f.Name, err)
		}
	}
	return append(dst, '}'), nil
}

// appendMapDefault: a string-key map is an object, any other an array of
// [key, value] pairs (both in JsonConverter's layout and in AvroData's).
func appendMapDefault(dst []byte, s *connectschema.Schema, v jval) ([]byte, error) {
	var err error
	if s.Keys.Type == connectschema.String && !s.Keys.Optional {
		if v.kind != '{' {
			return nil, fmt.Errorf("a map default must be an object")
		}
		dst = append(dst, '{')
		for i, k := range v.keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(appendJSONString(dst, k), ':')
			if dst, err = appendDefault(dst, s.Values, v.elems[i]); err != nil {
				return nil, err
			}
		}
		return append(dst, '}'), nil
	}
	if v.kind != '[' {
		return nil, fmt.Errorf("a map default with non-string keys must be an array of [key, value]")
	}
	dst = append(dst, '[')
	for i, e := range v.elems {
		if e.kind != '[' || len(e.elems) != 2 {
			return nil, fmt.Errorf("a map entry must be [key, value]")
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '[')
		if dst, err = appendDefault(dst, s.Keys, e.elems[0]); err != nil {
			return nil, err
		}
		dst = append(dst, ',')
		if dst, err = appendDefault(dst, s.Values, e.elems[1]); err != nil {
			return nil, err
		}
		dst = append(dst, ']')
	}
	return append(dst, ']'), nil
}

// latin1 is new String(bytes, ISO_8859_1).
func latin1(b []byte) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		out = utf8.AppendRune(out, rune(c))
	}
	return string(out)
}

// validDefault is Avro's Schema.isValidDefault: an invalid default is
// dropped from the field, as AvroData does.
func validDefault(n *node, avro []byte) bool {
	v, err := parseTree(avro)
	return err == nil && isValidDefault(n, v)
}

func isValidDefault(n *node, v jval) bool {
	switch n.kind {
	case tString, tBytes:
		return v.kind == '"'
	case tInt, tLong:
		if !v.integral() {
			return false
		}
		_, err := parseInt([]byte(v.text))
		if n.kind == tInt {
			i, _ := parseInt([]byte(v.text))
			return err == nil && i >= -1<<31 && i < 1<<31
		}
		return err == nil
	case tFloat, tDouble:
		return v.kind == 'n'
	case tBoolean:
		return v.kind == 't' || v.kind == 'f'
	case tNull:
		return v.kind == '0'
	case tArray:
		if v.kind != '[' {
			return false
		}
		for _, e := range v.elems {
			if !isValidDefault(n.items, e) {
				return false
			}
		}
		return true
	case tMap:
		if v.kind != '{' {
			return false
		}
		for _, e := range v.elems {
			if !isValidDefault(n.values, e) {
				return false
			}
		}
		return true
	case tUnion:
		for _, b := range n.branches {
			if isValidDefault(b, v) {
				return true
			}
		}
		return false
	}
	// tRecord: every field's value (or its default when absent) is valid.
	if v.kind != '{' {
		return false
	}
	for _, f := range n.fields {
		e, ok := v.get(f.name)
		if !ok {
			if f.def == nil {
				return false
			}
			continue
		}
		if !isValidDefault(f.typ, e) {
			return false
		}
	}
	return true
}

// encodeDefault is the body of a default: what a JSON null encodes to.
func encodeDefault(n *node, connect []byte) ([]byte, error) {
	var e encoder
	e.reset(connect)
	saved := n.onNull
	n.onNull = nil // a null default inside itself is not the default
	out, err := e.document(nil, n)
	n.onNull = saved
	return out, err
}
