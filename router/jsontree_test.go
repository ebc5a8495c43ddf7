package router

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
)

// parseJSONTreeStd is the encoding/json parser parseJSONTree replaced (its
// Decoder.Token was half the CPU of a registry converter's record): the
// reference the hand-written scanner must agree with.
func parseJSONTreeStd(src []byte) (jsonNode, error) {
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.UseNumber()
	n, err := readNodeStd(dec)
	if err != nil {
		return n, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return n, errors.New("trailing data after the JSON value")
	}
	return n, nil
}

func readNodeStd(dec *json.Decoder) (jsonNode, error) {
	tok, err := dec.Token()
	if err != nil {
		return jsonNode{}, err
	}
	switch t := tok.(type) {
	case json.Delim:
		n := jsonNode{kind: byte(t)}
		for dec.More() {
			if t == '{' {
				k, err := dec.Token()
				if err != nil {
					return n, err
				}
				n.keys = append(n.keys, k.(string))
			}
			e, err := readNodeStd(dec)
			if err != nil {
				return n, err
			}
			n.elems = append(n.elems, e)
		}
		_, err := dec.Token()
		return n, err
	case string:
		return jsonNode{kind: '"'}, nil
	case json.Number:
		return jsonNode{kind: 'n', number: string(t)}, nil
	case bool:
		return jsonNode{kind: 'b'}, nil
	}
	return jsonNode{kind: '0'}, nil
}

var jsonTreeSeeds = []string{
	`{"a":1,"b":[1,2.5,-3e2],"c":{"d":null,"e":true,"f":"x\"y\u00e9"},"g":[],"h":{}}`,
	`[{"k":1},{"k":"s"},null,false]`,
	` { "sp" : [ 1 , 2 ] } `,
	`"just a string"`, `12345678901234567890`, `-0.0e+1`, `null`, `true`,
	`{"\u0041":1,"a\\b":2}`, `{"a":1,"b":{"c":1,"c":[2]},"a":"x","\u0061":null}`, `{"a":1}x`, `{"a":}`, `[1,]`, `{"a" 1}`, `[01]`, `"\x01"`, "{\"\xff\":1}", `{`, `[`, ``,
}

// TestParseJSONTreeAgreesWithEncodingJSON: the same tree for valid JSON,
// an error for invalid JSON, on the seeds.
func TestParseJSONTreeAgreesWithEncodingJSON(t *testing.T) {
	for _, s := range jsonTreeSeeds {
		checkTree(t, []byte(s))
	}
}

func FuzzParseJSONTree(f *testing.F) {
	for _, s := range jsonTreeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) { checkTree(t, src) })
}

func checkTree(t *testing.T, src []byte) {
	t.Helper()
	got, err1 := parseJSONTree(src)
	want, err2 := parseJSONTreeStd(src)
	if (err1 == nil) != (err2 == nil) {
		t.Fatalf("%q: scanner error %v, encoding/json error %v", src, err1, err2)
	}
	if err1 == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: scanner %+v, encoding/json %+v", src, got, want)
	}
	if err1 == nil {
		checkMembers(t, got, src)
	}
}

// checkMembers: an object's members (the keys the inference reads) are
// the keys encoding/json's Unmarshal keeps, each with its last value, as
// Jackson's readTree keeps them.
func checkMembers(t *testing.T, n jsonNode, raw []byte) {
	t.Helper()
	switch n.kind {
	case '{':
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		members := n.members()
		if len(members) != len(m) {
			t.Fatalf("%q: %d members, encoding/json keeps %d keys", raw, len(members), len(m))
		}
		for _, k := range members {
			v, ok := m[n.keys[k.first]]
			if !ok || k.first > k.last || n.keys[k.last] != n.keys[k.first] {
				t.Fatalf("%q: member %q (%d..%d) not what encoding/json keeps", raw, n.keys[k.first], k.first, k.last)
			}
			checkMembers(t, n.elems[k.last], v)
		}
	case '[':
		var a []json.RawMessage
		if err := json.Unmarshal(raw, &a); err != nil || len(a) != len(n.elems) {
			t.Fatalf("%q: %d elements, encoding/json %d (%v)", raw, len(n.elems), len(a), err)
		}
		for i := range a {
			checkMembers(t, n.elems[i], a[i])
		}
	}
}

// Regression: the inference took a repeated key's schema from its first
// value, while Jackson's readTree (Debezium's ExpandJsonPayload) keeps the
// last value in the first one's place, so {"a":1,"a":"x"} got an int32
// field for a string value and a registry converter could not write it.
// The last value gives the schema, in the first place; a last null leaves
// the field out; objects with more than 16 keys (the map path) too.
func TestInferDuplicateKeys(t *testing.T) {
	var many strings.Builder
	many.WriteString(`{`)
	for i := range 20 {
		fmt.Fprintf(&many, `"k%d":%d,`, i, i)
	}
	many.WriteString(`"k3":"x","k0":null,"k19":true}`)
	var manyWant strings.Builder
	manyWant.WriteString(`{"type":"struct","fields":[`)
	for i := 1; i < 20; i++ {
		typ := "int32"
		switch i {
		case 3:
			typ = "string"
		case 19:
			typ = "boolean"
		}
		if i > 1 {
			manyWant.WriteString(`,`)
		}
		fmt.Fprintf(&manyWant, `{"type":"%s","optional":true,"field":"k%d"}`, typ, i)
	}
	manyWant.WriteString(`],"optional":true,"name":"payload"}`)
	for _, tc := range []struct{ payload, want string }{
		{`{"a":1,"b":2,"a":"x"}`, `{"type":"struct","fields":[{"type":"string","optional":true,"field":"a"},{"type":"int32","optional":true,"field":"b"}],"optional":true,"name":"payload"}`},
		{`{"a":1,"b":2,"a":null}`, `{"type":"struct","fields":[{"type":"int32","optional":true,"field":"b"}],"optional":true,"name":"payload"}`},
		{`{"a":null,"b":2,"a":1.5}`, `{"type":"struct","fields":[{"type":"double","optional":true,"field":"a"},{"type":"int32","optional":true,"field":"b"}],"optional":true,"name":"payload"}`},
		{`{"c":{"d":1,"d":{"f":1,"f":"x"}},"c":{"d":[1,"mixed"],"d":{"f":true}}}`, `{"type":"struct","fields":[{"type":"struct","fields":[{"type":"struct","fields":[{"type":"boolean","optional":true,"field":"f"}],"optional":true,"name":"payload.c.d","field":"d"}],"optional":true,"name":"payload.c","field":"c"}],"optional":true,"name":"payload"}`},
		{`{"h":[{"i":1,"i":"s"},{"i":"t"}]}`, `{"type":"struct","fields":[{"type":"array","items":{"type":"struct","fields":[{"type":"string","optional":true,"field":"i"}],"optional":true,"name":"payload.h"},"optional":true,"field":"h"}],"optional":true,"name":"payload"}`},
		{many.String(), manyWant.String()},
	} {
		s, err := inferTree([]byte(tc.payload))
		if err != nil {
			t.Errorf("%s: %v", tc.payload, err)
			continue
		}
		if got := string(appendSchema(nil, s, "")); got != tc.want {
			t.Errorf("%s:\ngot  %s\nwant %s", tc.payload, got, tc.want)
		}
	}
}
