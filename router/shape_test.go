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

// wideObject is a JSON object of n int fields whose names start with
// prefix.
func wideObject(prefix string, n int) []byte {
	b := []byte{'{'}
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `"`+prefix+strconv.Itoa(i)+`":1`...)
	}
	return append(b, '}')
}

// Regression: the shape cache was bounded by count only (1024 entries),
// so 1024 payloads of distinct huge shapes (10,000 keys: about 2 MB of
// shape, schema JSON and schema tree each) could hold gigabytes. It is
// bounded by bytes too, and a shape whose entry alone passes
// maxShapeEntry is not kept.
func TestShapeCacheBoundedByBytes(t *testing.T) {
	var c shapeCache
	calls := 0
	infer := func(src []byte) (*connectSchema, error) { calls++; return inferTree(src) }
	huge := wideObject("field_", 10000)
	for range 3 {
		s, err := c.lookup(huge, infer)
		if err != nil || s == nil || len(s.fields) != 10000 {
			t.Fatalf("a 10,000-key payload: %v, %v", s, err)
		}
	}
	if calls != 3 || len(c.schemas) != 0 || c.bytes != 0 {
		t.Fatalf("a 10,000-key shape: %d inferences, %d entries, %d bytes; want it inferred each time and not kept", calls, len(c.schemas), c.bytes)
	}

	// Shapes just under the per-entry limit: the cache starts over before
	// its bytes pass maxShapeBytes, long before maxShapes entries.
	n := 1
	for ; ; n *= 2 {
		s, _ := inferTree(wideObject("a0_", n*2))
		s.memo = appendSchema(nil, s, "")
		shape, _ := appendShape(nil, wideObject("a0_", n*2))
		if shapeBytes(shape, s, nil) > maxShapeEntry {
			break
		}
	}
	mid := wideObject("a0_", n)
	shape, _ := appendShape(nil, mid)
	s, _ := inferTree(mid)
	s.memo = appendSchema(nil, s, "")
	size := shapeBytes(shape, s, nil)
	if size <= maxShapeEntry/4 || size > maxShapeEntry {
		t.Fatalf("%d fields: an entry of %d bytes; want one near the per-entry limit %d", n, size, maxShapeEntry)
	}
	peakEntries, peakBytes := 0, 0
	for i := range 120 {
		_, _ = c.lookup(wideObject("a"+strconv.Itoa(i)+"_", n), infer)
		peakEntries, peakBytes = max(peakEntries, len(c.schemas)), max(peakBytes, c.bytes)
	}
	if peakBytes > maxShapeBytes || peakEntries > maxShapeBytes/size || peakEntries < maxShapeBytes/size/2 {
		t.Fatalf("entries of %d bytes: at most %d entries and %d bytes kept; want at most %d bytes (%d entries)", size, peakEntries, peakBytes, maxShapeBytes, maxShapeBytes/size)
	}
	// The kept entries are served from the cache.
	before := calls
	last := wideObject("a119_", n)
	if _, _ = c.lookup(last, infer); calls != before {
		t.Errorf("a kept shape was inferred again")
	}
	t.Logf("entries of %d fields, %d bytes each: at most %d kept (%d bytes)", n, size, peakEntries, peakBytes)
}
