package avro

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"testing"

	"github.com/outboxrelay/outboxrelay/internal/connectschema"
)

// project is what a JsonConverter payload means for a Connect schema, in
// the generic form decodeAvro (and Apache Avro's Python reader) gives:
// fields in schema order, absent or null fields as their default or null,
// keys without a field dropped, non-string-key maps as {"key","value"}
// records. It is written independently of the encoder.
func project(s *connectschema.Schema, v jval) (any, error) {
	if v.kind == '0' {
		if s.Default == nil {
			return nil, nil
		}
		d, err := parseTree(s.Default)
		if err != nil {
			return nil, err
		}
		return project(s, d)
	}
	switch s.Type {
	case connectschema.Struct:
		out := orderedObject{}
		for _, f := range s.Fields {
			e, _ := v.get(f.Name)
			p, err := project(f.Schema, e)
			if err != nil {
				return nil, err
			}
			out = append(out, kv{f.Name, p})
		}
		return out, nil
	case connectschema.Array:
		out := []any{}
		for _, e := range v.elems {
			p, err := project(s.Items, e)
			if err != nil {
				return nil, err
			}
			out = append(out, p)
		}
		return out, nil
	case connectschema.Map:
		if s.Keys.Type == connectschema.String && !s.Keys.Optional {
			out := orderedObject{}
			for i, k := range v.keys {
				p, err := project(s.Values, v.elems[i])
				if err != nil {
					return nil, err
				}
				out = append(out, kv{k, p})
			}
			return out, nil
		}
		out := []any{}
		for _, e := range v.elems {
			k, err := project(s.Keys, e.elems[0])
			if err != nil {
				return nil, err
			}
			val, err := project(s.Values, e.elems[1])
			if err != nil {
				return nil, err
			}
			out = append(out, orderedObject{{"key", k}, {"value", val}})
		}
		return out, nil
	}
	switch v.kind {
	case 'n':
		return json.Number(v.text), nil
	case '"':
		// A float's infinities as the tests' decoder writes them.
		if isFloat := s.Type == connectschema.Float || s.Type == connectschema.Double; isFloat && v.text == "Infinity" {
			return json.Number("1e999"), nil
		} else if isFloat && v.text == "-Infinity" {
			return json.Number("-1e999"), nil
		}
	case 't', 'f':
		return v.kind == 't', nil
	}
	return v.text, nil
}

type kv struct {
	k string
	v any
}

type orderedObject []kv

func (o orderedObject) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, e := range o {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, e.k)
		v, err := json.Marshal(e.v)
		if err != nil {
			return nil, err
		}
		b = append(append(b, ':'), v...)
	}
	return append(b, '}'), nil
}

// sameJSON compares two JSON texts: objects as ordered key lists, numbers
// by value (199.00 is 199.0), within float32's precision when loose.
func sameJSON(a, b []byte, loose bool) error {
	x, err := parseTree(a)
	if err != nil {
		return fmt.Errorf("%s: %w", a, err)
	}
	y, err := parseTree(b)
	if err != nil {
		return fmt.Errorf("%s: %w", b, err)
	}
	if !sameTree(x, y, loose) {
		return fmt.Errorf("%s\n  differs from\n%s", a, b)
	}
	return nil
}

func sameTree(x, y jval, loose bool) bool {
	if x.kind != y.kind || len(x.elems) != len(y.elems) || len(x.keys) != len(y.keys) {
		return false
	}
	switch x.kind {
	case 'n':
		p, _, err1 := big.ParseFloat(x.text, 10, 200, big.ToNearestEven)
		q, _, err2 := big.ParseFloat(y.text, 10, 200, big.ToNearestEven)
		if err1 != nil || err2 != nil {
			return false
		}
		if p.Cmp(q) == 0 {
			return true
		}
		if !loose {
			return false
		}
		pf, _ := p.Float64()
		qf, _ := q.Float64()
		return float32(pf) == float32(qf)
	case '"':
		return x.text == y.text
	}
	for i := range x.keys {
		if x.keys[i] != y.keys[i] {
			return false
		}
	}
	for i := range x.elems {
		if !sameTree(x.elems[i], y.elems[i], loose) {
			return false
		}
	}
	return true
}

// roundTrip encodes payload with c, decodes the body with decodeAvro and
// checks it against project; it returns the body.
func roundTrip(t testing.TB, s *connectschema.Schema, c *Codec, payload string) []byte {
	t.Helper()
	body, err := c.Append(nil, []byte(payload))
	if err != nil {
		t.Fatalf("Append(%s): %v", payload, err)
	}
	got, err := decodeAvro(c.root, body)
	if err != nil {
		t.Fatalf("decoding the body of %s (% x): %v", payload, body, err)
	}
	v, err := parseTree([]byte(payload))
	if err != nil {
		t.Fatal(err)
	}
	p, err := project(s, v)
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := sameJSON(got, want, true); err != nil {
		t.Errorf("payload %s:\n%v", payload, err)
	}
	if !bytes.Equal(body, mustAppend(t, c, got)) {
		t.Errorf("payload %s: re-encoding the decoded value gives other bytes", payload)
	}
	return body
}

// mustAppend re-encodes a decoded value, its MapEntry records turned back
// into JsonConverter's [key, value] pairs.
func mustAppend(t testing.TB, c *Codec, decoded []byte) []byte {
	t.Helper()
	v, err := parseTree(decoded)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Append(nil, connectLayout(nil, c.root, v))
	if err != nil {
		t.Fatalf("re-encoding %s: %v", decoded, err)
	}
	return b
}

// connectLayout writes a decoded value as JsonConverter's payload.
func connectLayout(dst []byte, n *node, v jval) []byte {
	switch {
	case v.kind == '0':
		return append(dst, "null"...)
	case n.kind == tUnion:
		return connectLayout(dst, n.branches[n.valueAt], v)
	case n.kind == tRecord && n.entry:
		k, _ := v.get("key")
		val, _ := v.get("value")
		dst = connectLayout(append(dst, '['), n.fields[0].typ, k)
		return append(connectLayout(append(dst, ','), n.fields[1].typ, val), ']')
	case n.kind == tRecord || n.kind == tMap:
		dst = append(dst, '{')
		for i, k := range v.keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			t := n.values
			if n.kind == tRecord {
				t = n.fields[n.index[k]].typ
			}
			dst = connectLayout(append(appendJSONString(dst, k), ':'), t, v.elems[i])
		}
		return append(dst, '}')
	case n.kind == tArray:
		dst = append(dst, '[')
		for i, e := range v.elems {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = connectLayout(dst, n.items, e)
		}
		return append(dst, ']')
	case v.kind == '"':
		return appendJSONString(dst, v.text)
	case v.kind == 't':
		return append(dst, "true"...)
	case v.kind == 'f':
		return append(dst, "false"...)
	}
	return append(dst, v.text...)
}
