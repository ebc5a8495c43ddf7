package router

import (
	"bytes"
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
		ca, sa, erra := compactShape(a)
		cb, sb, errb := compactShape(b)
		if erra != nil || errb != nil || !bytes.Equal(sa, sb) {
			return
		}
		xa, ea := inferTree(ca)
		xb, eb := inferTree(cb)
		if (ea == nil) != (eb == nil) || !reflect.DeepEqual(xa, xb) {
			t.Fatalf("shape %q: %q infers %+v (%v), %q infers %+v (%v)", sa, ca, xa, ea, cb, xb, eb)
		}
	})
}

// compactShape compacts src and returns it with its shape, as the router
// does for a payload with JsonConverter schemas.
func compactShape(src []byte) (compact, shape []byte, err error) {
	c := compactor{shapes: true}
	compact, err = c.append(nil, src)
	return compact, c.shape, err
}

// lookupJSON looks src up in c as the router does: compacted, by its shape.
func lookupJSON(c *shapeCache, src []byte, infer func([]byte) (*connectSchema, error)) (*connectSchema, error) {
	compact, shape, err := compactShape(src)
	if err != nil {
		return nil, err
	}
	return c.lookup(shape, compact, infer)
}

// TestShapeCache: a second payload of a known shape is served from the
// cache, a new shape is inferred, and the cache starts over when full.
func TestShapeCache(t *testing.T) {
	var c shapeCache
	calls := 0
	infer := func(src []byte) (*connectSchema, error) { calls++; return inferTree(src) }
	first, err := lookupJSON(&c, []byte(`{"a":1,"b":"x"}`), infer)
	if err != nil {
		t.Fatal(err)
	}
	second, _ := lookupJSON(&c, []byte(`{"a":7,"b":"other"}`), infer)
	if calls != 1 || second != first {
		t.Fatalf("same shape: %d inferences, schemas %p %p", calls, first, second)
	}
	if _, _ = lookupJSON(&c, []byte(`{"a":7.5,"b":"x"}`), infer); calls != 2 {
		t.Fatalf("a double where an int32 was: %d inferences, want 2", calls)
	}
	for i := range maxShapes + 10 {
		_, _ = lookupJSON(&c, []byte(`{"k`+strconv.Itoa(i)+`":1}`), infer)
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
		s, err := lookupJSON(&c, huge, infer)
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
		_, shape, _ := compactShape(wideObject("a0_", n*2))
		if shapeBytes(shape, s, nil) > maxShapeEntry {
			break
		}
	}
	mid := wideObject("a0_", n)
	_, shape, _ := compactShape(mid)
	s, _ := inferTree(mid)
	s.memo = appendSchema(nil, s, "")
	size := shapeBytes(shape, s, nil)
	if size <= maxShapeEntry/4 || size > maxShapeEntry {
		t.Fatalf("%d fields: an entry of %d bytes; want one near the per-entry limit %d", n, size, maxShapeEntry)
	}
	peakEntries, peakBytes := 0, 0
	for i := range 120 {
		_, _ = lookupJSON(&c, wideObject("a"+strconv.Itoa(i)+"_", n), infer)
		peakEntries, peakBytes = max(peakEntries, len(c.schemas)), max(peakBytes, c.bytes)
	}
	if peakBytes > maxShapeBytes || peakEntries > maxShapeBytes/size || peakEntries < maxShapeBytes/size/2 {
		t.Fatalf("entries of %d bytes: at most %d entries and %d bytes kept; want at most %d bytes (%d entries)", size, peakEntries, peakBytes, maxShapeBytes, maxShapeBytes/size)
	}
	// The kept entries are served from the cache.
	before := calls
	last := wideObject("a119_", n)
	if _, _ = lookupJSON(&c, last, infer); calls != before {
		t.Errorf("a kept shape was inferred again")
	}
	t.Logf("entries of %d fields, %d bytes each: at most %d kept (%d bytes)", n, size, peakEntries, peakBytes)
}

// FuzzNumberLetter: numberLetter's shortcuts by digit count give the
// letter of numberType, which parses, for every JSON number.
func FuzzNumberLetter(f *testing.F) {
	for _, s := range []string{"0", "-0", "7", "123456789", "-123456789", "1234567890", "2147483647", "2147483648",
		"-2147483648", "-2147483649", "99999999999", "999999999999999999", "9223372036854775807", "9223372036854775808",
		"-9223372036854775808", "-9223372036854775809", "12345678901234567890", "1.5", "-2e3", "1E+2"} {
		f.Add(s)
	}
	letters := map[string]byte{"int32": 'i', "int64": 'l', "double": 'd'}
	f.Fuzz(func(t *testing.T, lit string) {
		if end, ok := scanNumber([]byte(lit), 0); !ok || end != len(lit) {
			return
		}
		if got, want := numberLetter([]byte(lit)), letters[numberType(lit)]; got != want {
			t.Fatalf("numberLetter(%s) = %c, numberType says %c", lit, got, want)
		}
	})
}
