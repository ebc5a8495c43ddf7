package router

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"testing"
)

// inferTree is the uncached inference the cache stands in for.
func inferTree(src []byte) (*connectSchema, error) {
	tree, err := parseJSONTree(src)
	if err != nil {
		return nil, err
	}
	return schemaInference{}.infer("payload", tree)
}

// FuzzShapeSound: two payloads of one shape have the same inferred schema
// (or the same failure), so a schema cached by shape is the payload's own.
func FuzzShapeSound(f *testing.F) {
	for _, p := range [][2]string{
		{`{"a":1,"b":"x"}`, `{"a":2,"b":"y"}`},
		{`{"a":1}`, `{"a":3000000000}`},
		{`{"a":[1,2]}`, `{"a":[1,"x"]}`},
		{`{"a":{"b":null}}`, `{"a":{"b":true}}`},
		{`[{"k":1},{"j":2}]`, `[{"k":5},{"j":6}]`},
		{`{"a\"b":1.5}`, `{"a\"b":2e3}`},
		{`"s"`, `"t"`},
	} {
		f.Add([]byte(p[0]), []byte(p[1]))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		var ca, cb bytes.Buffer
		if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
			return
		}
		sa, oka := appendShape(nil, ca.Bytes())
		sb, okb := appendShape(nil, cb.Bytes())
		if !oka || !okb {
			t.Fatalf("appendShape refused valid JSON %q or %q", ca.Bytes(), cb.Bytes())
		}
		if !bytes.Equal(sa, sb) {
			return
		}
		xa, ea := inferTree(ca.Bytes())
		xb, eb := inferTree(cb.Bytes())
		if (ea == nil) != (eb == nil) || !reflect.DeepEqual(xa, xb) {
			t.Fatalf("shape %q: %q infers %+v (%v), %q infers %+v (%v)", sa, ca.Bytes(), xa, ea, cb.Bytes(), xb, eb)
		}
	})
}

// TestShapeCache: a second payload of a known shape is served from the
// cache, a new shape is inferred, and the cache starts over when full.
func TestShapeCache(t *testing.T) {
	var c shapeCache
	calls := 0
	infer := func(src []byte) (*connectSchema, error) { calls++; return inferTree(src) }
	first, err := c.lookup([]byte(`{"a":1,"b":"x"}`), infer)
	if err != nil {
		t.Fatal(err)
	}
	second, _ := c.lookup([]byte(`{"a":7,"b":"other"}`), infer)
	if calls != 1 || second != first {
		t.Fatalf("same shape: %d inferences, schemas %p %p", calls, first, second)
	}
	if _, _ = c.lookup([]byte(`{"a":7.5,"b":"x"}`), infer); calls != 2 {
		t.Fatalf("a double where an int32 was: %d inferences, want 2", calls)
	}
	for i := range maxShapes + 10 {
		_, _ = c.lookup([]byte(`{"k`+strconv.Itoa(i)+`":1}`), infer)
	}
	// 2 shapes before, then maxShapes+10: the cache is full at the
	// (maxShapes-2)th and starts over with it.
	if want := 2 + maxShapes + 10 - maxShapes; len(c.schemas) != want {
		t.Fatalf("%d shapes kept; want the cache started over when full, %d since", len(c.schemas), want)
	}
}
