package avro

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestAppendErrors(t *testing.T) {
	const rec = `{"type":"struct","fields":[{"type":"int16","optional":false,"field":"n"},{"type":"array","items":{"type":"struct","fields":[{"type":"bytes","optional":true,"field":"b"},{"type":"map","keys":{"type":"string","optional":false},"values":{"type":"float","optional":false},"optional":true,"field":"m"}],"optional":false,"name":"x.Item"},"optional":true,"field":"items"}],"optional":false,"name":"x.Top"}`
	for _, tc := range []struct{ payload, want string }{
		{`{"n":40000}`, "n: 40000 is out of range"},
		{`{"n":1.5}`, "n: 1.5 is not an integer"},
		{`{"n":"1"}`, `n: "1" where a number was expected`},
		{`{}`, "n: missing (the field is not optional and has no default)"},
		{`{"n":null}`, "n: null for a required int"},
		{`{"n":1,"items":[{"b":"AA=="},{"b":"!!"}]}`, `items[1].b: "!!" is not base64`},
		{`{"n":1,"items":[{"m":{"k":true}}]}`, "items[0].m{k}: true where a number was expected"},
		{`{"n":1,"items":[{"m":{"k\u00e9":null}}]}`, "items[0].m{ké}: null for a required float"},
		{`{"n":1,"items":{}}`, "items: {} where an array was expected"},
		{`{"n":1,"items":[null]}`, "items[0]: null for a required record"},
		{`{"n":1} x`, "data after the JSON value"},
		{`{"n":1`, "the JSON ends inside an array or object"},
		{`{"n":01}`, "where a number was expected"},
		{`{"n":1,"zz":[1,}`, "where a value was expected"},
		{`{"n":1,"zz":"a` + "\x01" + `"}`, "a control character in a string"},
		{`{"n":1,"items":[{"b":"\x"}]}`, `the escape \x in a string`},
		{``, "the JSON ends where a value was expected"},
	} {
		_, c := compileCase(t, rec)
		if _, err := c.Append(nil, []byte(tc.payload)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Append(%s) = %v, want %q", tc.payload, err, tc.want)
		}
	}
}

// TestAppendBytes pins exact bodies against the Avro specification's
// encoding examples (zigzag: 0→00, -1→01, 1→02, -64→7f, 64→8001; "foo" →
// 06 66 6f 6f; a union's branch index first; arrays in one block then 0).
func TestAppendBytes(t *testing.T) {
	for _, tc := range []struct {
		schema, payload string
		want            []byte
	}{
		{`{"type":"int64","optional":false}`, `0`, []byte{0x00}},
		{`{"type":"int64","optional":false}`, `-1`, []byte{0x01}},
		{`{"type":"int64","optional":false}`, `1`, []byte{0x02}},
		{`{"type":"int64","optional":false}`, `-64`, []byte{0x7f}},
		{`{"type":"int64","optional":false}`, `64`, []byte{0x80, 0x01}},
		{`{"type":"string","optional":false}`, `"foo"`, []byte{0x06, 'f', 'o', 'o'}},
		{`{"type":"string","optional":true}`, `null`, []byte{0x00}},
		{`{"type":"string","optional":true}`, `"a"`, []byte{0x02, 0x02, 'a'}},
		{`{"type":"string","optional":true,"default":"d"}`, `"a"`, []byte{0x00, 0x02, 'a'}},
		{`{"type":"string","optional":true,"default":"d"}`, `null`, []byte{0x00, 0x02, 'd'}},
		{`{"type":"array","items":{"type":"int32","optional":false},"optional":false}`, `[3, 27]`, []byte{0x04, 0x06, 0x36, 0x00}},
		{`{"type":"array","items":{"type":"int32","optional":false},"optional":false}`, `[]`, []byte{0x00}},
		{`{"type":"boolean","optional":false}`, `true`, []byte{0x01}},
		{`{"type":"double","optional":false}`, `1`, []byte{0, 0, 0, 0, 0, 0, 0xf0, 0x3f}},
		{`{"type":"float","optional":false}`, `1`, []byte{0, 0, 0x80, 0x3f}},
		{`{"type":"bytes","optional":false}`, `"AQI="`, []byte{0x04, 1, 2}},
		{`{"type":"map","keys":{"type":"string","optional":false},"values":{"type":"int32","optional":false},"optional":false}`, `{"a":1}`, []byte{0x02, 0x02, 'a', 0x02, 0x00}},
		{`{"type":"struct","fields":[{"type":"int32","optional":false,"field":"a"},{"type":"string","optional":false,"field":"b"}],"optional":false}`, `{"b":"x","a":1}`, []byte{0x02, 0x02, 'x'}},
		{`{"type":"struct","fields":[{"type":"int32","optional":false,"field":"a"}],"optional":false}`, `{"a":1,"a":2}`, []byte{0x04}},
	} {
		_, c := compileCase(t, tc.schema)
		got, err := c.Append([]byte{0xEE}, []byte(tc.payload))
		if err != nil {
			t.Errorf("%s %s: %v", tc.schema, tc.payload, err)
			continue
		}
		if !bytes.Equal(got, append([]byte{0xEE}, tc.want...)) {
			t.Errorf("%s %s: % x, want ee % x", tc.schema, tc.payload, got, tc.want)
		}
	}
}

// A long array's count takes more than one byte: the items move right.
func TestAppendLongArray(t *testing.T) {
	s, c := compileCase(t, `{"type":"array","items":{"type":"string","optional":false},"optional":false}`)
	var p strings.Builder
	p.WriteByte('[')
	for i := 0; i < 300; i++ {
		if i > 0 {
			p.WriteByte(',')
		}
		p.WriteString(`"ab"`)
	}
	p.WriteByte(']')
	body := roundTrip(t, s, c, p.String())
	if !bytes.HasPrefix(body, []byte{0xd8, 0x04, 0x04, 'a', 'b'}) {
		t.Errorf("body starts % x", body[:5])
	}
	big := strings.Repeat("x", 200)
	_, sc := compileCase(t, `{"type":"bytes","optional":false}`)
	enc := "eHh4" // "xxx"
	b, err := sc.Append(nil, []byte(`"`+strings.Repeat(enc, len(big)/3)+`"`))
	if err != nil || len(b) != 2+198 || b[0] != 0x8c || b[1] != 0x03 {
		t.Errorf("bytes of 198: % x… %v", b[:2], err)
	}
}

// Regression: the float path refused "NaN", "Infinity" and "-Infinity",
// the strings JsonConverter (Jackson's QUOTE_NON_NUMERIC_NUMBERS) writes for
// a double precision or real column that is not finite, so such a row
// could not be written with AvroConverter. They are the IEEE values, NaN
// with Java's bits (Double.NaN, Float.NaN); other strings stay refused.
func TestAppendNonFinite(t *testing.T) {
	const double = `{"type":"double","optional":false}`
	const float = `{"type":"float","optional":false}`
	const optional = `{"type":"double","optional":true}`
	for _, tc := range []struct {
		schema, payload string
		want            []byte
	}{
		{double, `"NaN"`, []byte{0, 0, 0, 0, 0, 0, 0xf8, 0x7f}},
		{double, `"Infinity"`, []byte{0, 0, 0, 0, 0, 0, 0xf0, 0x7f}},
		{double, `"-Infinity"`, []byte{0, 0, 0, 0, 0, 0, 0xf0, 0xff}},
		{double, `1e400`, []byte{0, 0, 0, 0, 0, 0, 0xf0, 0x7f}},
		{float, `"NaN"`, []byte{0, 0, 0xc0, 0x7f}},
		{float, `"Infinity"`, []byte{0, 0, 0x80, 0x7f}},
		{float, `"-Infinity"`, []byte{0, 0, 0x80, 0xff}},
		{optional, `"NaN"`, []byte{0x02, 0, 0, 0, 0, 0, 0, 0xf8, 0x7f}},
	} {
		s, c := compileCase(t, tc.schema)
		got, err := c.Append(nil, []byte(tc.payload))
		if err != nil {
			t.Errorf("%s %s: %v", tc.schema, tc.payload, err)
			continue
		}
		if !bytes.Equal(got, tc.want) {
			t.Errorf("%s %s: % x, want % x", tc.schema, tc.payload, got, tc.want)
		}
		roundTrip(t, s, c, tc.payload)
	}
	for _, bad := range []string{`"nan"`, `"Inf"`, `"+Infinity"`, `""`} {
		_, c := compileCase(t, double)
		if _, err := c.Append(nil, []byte(bad)); err == nil || !strings.Contains(err.Error(), "where a number was expected") {
			t.Errorf("Append(%s) = %v, want a refusal", bad, err)
		}
	}
	rec := `{"type":"struct","fields":[{"type":"double","optional":true,"field":"score"},{"type":"float","optional":true,"field":"ratio"}],"optional":false,"name":"x.Stats"}`
	s, c := compileCase(t, rec)
	roundTrip(t, s, c, `{"score":"-Infinity","ratio":"NaN"}`)
}

// Regression: a repeated key whose first value does not fit the schema
// (inferred, as Jackson reads it, from the last one) failed the record:
// the encoder wrote the first value at once and gave up on its error,
// before reaching the value that replaces it (conformance case 63). A
// value that does not fit and is not replaced still fails, with its path.
func TestAppendRepeatedKeyReplacesBadValue(t *testing.T) {
	const rec = `{"type":"struct","fields":[{"type":"string","optional":true,"field":"a"},{"type":"int32","optional":true,"field":"b"},{"type":"struct","fields":[{"type":"struct","fields":[{"type":"string","optional":true,"field":"f"}],"optional":true,"name":"p.c.d","field":"d"}],"optional":true,"name":"p.c","field":"c"}],"optional":true,"name":"p"}`
	s, c := compileCase(t, rec)
	for _, p := range []string{
		`{"a":1,"b":2,"a":"x"}`,
		`{"a":[{"deep":1}],"a":"x","b":2}`,
		`{"c":{"d":1,"d":{"f":1,"f":"y"}},"a":"z"}`,
		`{"c":{"d":{"f":1}},"c":{"d":{"f":"y"}}}`,
		`{"c":{"d":{"f":1},"d":{"f":"y"}},"c":null}`,
	} {
		roundTrip(t, s, c, p)
	}
	for _, tc := range []struct{ payload, want string }{
		{`{"a":1,"b":2}`, "a: 1 where a string was expected"},
		{`{"a":"x","b":2,"a":1}`, "a: 1 where a string was expected"},
		{`{"c":{"d":{"f":1}},"b":2}`, "c.d.f: 1 where a string was expected"},
		{`{"a":1,"b":2,"a":"x"`, "the JSON ends inside an array or object"},
	} {
		if _, err := c.Append(nil, []byte(tc.payload)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Append(%s) = %v, want %q", tc.payload, err, tc.want)
		}
	}
}

// repeatedKeyLevels is a payload of depth levels, each object repeating
// the key "a" after its nested field "b" (first) or around it (second),
// its first value not fitting (third), and its Connect schema.
func repeatedKeyLevels(shape, depth int) (schema, payload string) {
	heads := [...]string{`{"b":`, `{"a":1,"b":`, `{"a":"x","b":`}
	tails := [...]string{`,"a":1,"a":2}`, `,"a":2}`, `,"a":2}`}
	schema = `{"type":"int32","optional":true}`
	for i := range depth {
		a, b := `{"type":"int32","optional":true,"field":"a"}`, schema[:len(schema)-1]+`,"field":"b"}`
		fields := b + "," + a // b first in the schema's order
		if shape > 0 {
			fields = a + "," + b
		}
		schema = fmt.Sprintf(`{"type":"struct","fields":[%s],"optional":true,"name":"p%d"}`, fields, i)
	}
	payload = strings.Repeat(heads[shape], depth) + "7" + strings.Repeat(tails[shape], depth)
	return schema, payload
}

// Regression: a key repeated at every level of a payload took time
// exponential in the depth (depth 20: 3.2 s, 22: 11 s): on the repeated
// key the record was written again from its start, encoding again the
// nested records written before it, each of which started over too. Now
// the object is read once and the fields already written are kept; 60
// levels take well under a millisecond (the bound is generous for a
// shared machine: exponential time would be years).
func TestAppendRepeatedKeysLinear(t *testing.T) {
	for shape := range 3 {
		s, c := compileCase(t, must(repeatedKeyLevels(shape, 6)))
		_, p := repeatedKeyLevels(shape, 6)
		roundTrip(t, s, c, p)
		schema, payload := repeatedKeyLevels(shape, 60)
		_, c = compileCase(t, schema)
		start := time.Now()
		if _, err := c.Append(nil, []byte(payload)); err != nil {
			t.Fatalf("shape %d: %v", shape, err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("shape %d: 60 levels took %v", shape, d)
		}
	}
}

func must(schema, _ string) string { return schema }

// BenchmarkAppendRepeatedKeys: time per record against the depth of a
// payload repeating a key at every level (linear since the fix; before
// it, each level doubled the time).
func BenchmarkAppendRepeatedKeys(b *testing.B) {
	for _, depth := range []int{10, 20, 25} {
		schema, payload := repeatedKeyLevels(0, depth)
		_, c := compileCase(b, schema)
		b.Run(fmt.Sprintf("depth%d", depth), func(b *testing.B) {
			var dst []byte
			for b.Loop() {
				var err error
				if dst, err = c.Append(dst[:0], []byte(payload)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
