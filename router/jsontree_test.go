package router

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
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
	`{"\u0041":1,"a\\b":2}`, `{"a":1}x`, `{"a":}`, `[1,]`, `{"a" 1}`, `[01]`, `"\x01"`, "{\"\xff\":1}", `{`, `[`, ``,
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
}
