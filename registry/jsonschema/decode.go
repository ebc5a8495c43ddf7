package jsonschema

import (
	"bytes"
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

// string reads a JSON string.
func (p *parser) string() (string, error) {
	end := valueEnd(p.src, p.i)
	raw := p.src[p.i:end]
	p.i = end
	return unquote(raw)
}

// The span readers below walk JSON text json.Valid accepted, handing out
// each value's text without decoding it.

// members calls fn with each member of the object raw: the key's quoted
// text and the value's text.
func members(raw []byte, fn func(key, val []byte) error) error {
	for at := firstElement(raw); raw[at] != '}'; {
		key, val, next := nextMember(raw, at)
		if err := fn(key, val); err != nil {
			return err
		}
		at = next
	}
	return nil
}

// elements calls fn with the text of each element of the array raw.
func elements(raw []byte, fn func(val []byte) error) error {
	for at := firstElement(raw); raw[at] != ']'; {
		val, next := nextElement(raw, at)
		if err := fn(val); err != nil {
			return err
		}
		at = next
	}
	return nil
}

// firstElement is where the first member or element of the object or
// array raw starts, or its closing bracket.
func firstElement(raw []byte) int { return skipSpace(raw, 1) }

// nextMember reads the member at i: its key's quoted text, its value's
// text, and where the next member (or the closing brace) starts.
func nextMember(raw []byte, i int) (key, val []byte, next int) {
	kEnd := valueEnd(raw, i)
	key = raw[i:kEnd]
	i = skipSpace(raw, kEnd)
	i = skipSpace(raw, i+1) // :
	val, next = nextElement(raw, i)
	return key, val, next
}

// nextElement reads the value at i: its text, and where the next one (or
// the closing bracket) starts.
func nextElement(raw []byte, i int) (val []byte, next int) {
	end := valueEnd(raw, i)
	next = skipSpace(raw, end)
	if raw[next] == ',' {
		next = skipSpace(raw, next+1)
	}
	return raw[i:end], next
}

func skipSpace(raw []byte, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
		i++
	}
	return i
}

// valueEnd returns the index just past the value starting at raw[i].
func valueEnd(raw []byte, i int) int {
	switch raw[i] {
	case '"':
		for i++; raw[i] != '"'; i++ {
			if raw[i] == '\\' {
				i++
			}
		}
		return i + 1
	case '{', '[':
		depth := 0
		for ; ; i++ {
			switch raw[i] {
			case '"':
				i = valueEnd(raw, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
	}
	for i < len(raw) && raw[i] != ',' && raw[i] != '}' && raw[i] != ']' && raw[i] != ' ' && raw[i] != '\t' && raw[i] != '\n' && raw[i] != '\r' {
		i++
	}
	return i
}

// unquote decodes a JSON string's text (invalid UTF-8 becomes U+FFFD, as
// encoding/json reads it).
func unquote(raw []byte) (string, error) {
	if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw[1 : len(raw)-1]), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("reading a string: %w", err)
	}
	return s, nil
}
