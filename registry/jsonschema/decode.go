package jsonschema

import (
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// object is a JSON object with its keys in the order the text has them
// (Jackson's ObjectNode and the HashMap JsonConverter fills from it keep
// that order where Java's hash order leaves a tie).
type object struct {
	keys []string
	vals map[string]any
}

// decode reads one JSON value: nil, bool, json.Number (the number's text),
// string, []any or *object. A repeated key keeps its first place and its
// last value, as Jackson's ObjectNode.set does.
func decode(src []byte) (any, error) {
	if !json.Valid(src) {
		var v any
		if err := json.Unmarshal(src, &v); err != nil {
			return nil, err
		}
		return nil, errors.New("more than one JSON value")
	}
	p := parser{src: src}
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	if p.skipSpace(); p.i != len(src) {
		return nil, errors.New("more than one JSON value")
	}
	return v, nil
}

// parser reads text json.Valid accepted.
type parser struct {
	src []byte
	i   int
}

func (p *parser) skipSpace() {
	for p.i < len(p.src) && (p.src[p.i] == ' ' || p.src[p.i] == '\t' || p.src[p.i] == '\n' || p.src[p.i] == '\r') {
		p.i++
	}
}

func (p *parser) value() (any, error) {
	p.skipSpace()
	switch c := p.src[p.i]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		return p.string()
	case c == 't':
		p.i += 4
		return true, nil
	case c == 'f':
		p.i += 5
		return false, nil
	case c == 'n':
		p.i += 4
		return nil, nil
	default:
		start := p.i
		for p.i < len(p.src) && isNumberByte(p.src[p.i]) {
			p.i++
		}
		return json.Number(p.src[start:p.i]), nil
	}
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

func (p *parser) object() (any, error) {
	p.i++ // {
	o := &object{vals: map[string]any{}}
	for {
		p.skipSpace()
		if p.src[p.i] == '}' {
			p.i++
			return o, nil
		}
		if p.src[p.i] == ',' {
			p.i++
			p.skipSpace()
		}
		k, err := p.string()
		if err != nil {
			return nil, err
		}
		p.skipSpace()
		p.i++ // :
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		if _, dup := o.vals[k]; !dup {
			o.keys = append(o.keys, k)
		}
		o.vals[k] = v
	}
}

func (p *parser) array() (any, error) {
	p.i++ // [
	out := []any{}
	for {
		p.skipSpace()
		switch p.src[p.i] {
		case ']':
			p.i++
			return out, nil
		case ',':
			p.i++
		}
		p.skipSpace()
		if p.src[p.i] == ']' {
			continue
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
}

// string reads a JSON string; one with escapes goes through encoding/json
// (which also turns invalid UTF-8 into U+FFFD, as it does without escapes
// here for consistency).
func (p *parser) string() (string, error) {
	start := p.i
	p.i++
	escaped := false
	for p.src[p.i] != '"' {
		if p.src[p.i] == '\\' {
			escaped = true
			p.i++
		}
		p.i++
	}
	p.i++
	raw := p.src[start:p.i]
	if !escaped && utf8.Valid(raw) {
		return string(raw[1 : len(raw)-1]), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("reading a string: %w", err)
	}
	return s, nil
}
