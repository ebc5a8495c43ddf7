package jsonschema

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/outboxrelay/outboxrelay/internal/connectschema"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// testCase is one Connect record the router writes, {"schema":…,"payload":…}.
type testCase struct {
	name    string
	schema  []byte
	payload []byte
}

// handCases reads testdata/cases.jsonl: the Connect types and options the
// router's outputs do not all show.
func handCases(t testing.TB) []testCase {
	t.Helper()
	f, err := os.ReadFile("testdata/cases.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var out []testCase
	for _, line := range bytes.Split(bytes.TrimSpace(f), []byte("\n")) {
		var c struct {
			Case    string
			Schema  json.RawMessage
			Payload json.RawMessage
		}
		if err := json.Unmarshal(line, &c); err != nil {
			t.Fatalf("cases.jsonl: %v: %s", err, line)
		}
		out = append(out, testCase{c.Case, c.Schema, c.Payload})
	}
	return out
}

var recordLine = regexp.MustCompile(`^  (key|value) +(\{"schema":.*)$`)

// routerCases reads the router's golden outputs (testdata/router/*.golden
// of the repository): every key or value written with JsonConverter
// schemas.enable=true.
func routerCases(t testing.TB) []testCase {
	t.Helper()
	files, err := filepath.Glob("../../testdata/router/*.golden")
	if err != nil || len(files) == 0 {
		t.Fatalf("no router goldens: %v", err)
	}
	var out []testCase
	for _, file := range files {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		n := 0
		for sc.Scan() {
			m := recordLine.FindStringSubmatch(sc.Text())
			if m == nil {
				continue
			}
			sch, pay, err := connectschema.SplitEnvelope([]byte(m[2]))
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			name := "router-" + strings.TrimSuffix(filepath.Base(file), ".golden") + "-" + m[1]
			if n++; n > 1 {
				name += "-" + string(rune('0'+n))
			}
			out = append(out, testCase{name, sch, pay})
		}
		f.Close()
	}
	return out
}

// TestGolden compiles each case and appends its payload; the schema text,
// the name and the body are pinned in testdata/<case>.json (-update).
func TestGolden(t *testing.T) {
	cases := append(handCases(t), routerCases(t)...)
	if len(cases) < 20 {
		t.Fatalf("only %d cases", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := compileAndAppend(t, tc)
			path := filepath.Join("testdata", tc.name+".json")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s:\ngot  %s\nwant %s", tc.name, got, want)
			}
		})
	}
}

// compileAndAppend returns {"name":…,"schema":<text>,"body":<body>}, and
// checks that both are JSON.
func compileAndAppend(t *testing.T, tc testCase) []byte {
	t.Helper()
	s, err := connectschema.Parse(tc.schema)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	body, err := c.Append(nil, tc.payload)
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid([]byte(c.Schema())) || !json.Valid(body) {
		t.Fatalf("not JSON: schema %s body %s", c.Schema(), body)
	}
	name, _ := json.Marshal(c.Name())
	var b bytes.Buffer
	b.WriteString(`{"name":` + string(name) + ",\n")
	b.WriteString(` "schema":` + c.Schema() + ",\n")
	b.WriteString(` "body":` + string(body) + "}\n")
	return b.Bytes()
}

// TestRules pins the JsonSchemaData rules one by one, each with the Java
// source it comes from (json-schema-converter/.../JsonSchemaData.java).
func TestRules(t *testing.T) {
	for _, tc := range []struct{ rule, schema, want, name string }{
		// rawSchemaFromConnectSchema INT64: integer + connect.type
		{"int64", `{"type":"int64"}`, `{"type":"integer","connect.type":"int64"}`, ""},
		// FLOAT32 / FLOAT64: number + float32/float64
		{"float", `{"type":"float"}`, `{"type":"number","connect.type":"float32"}`, ""},
		{"double", `{"type":"double"}`, `{"type":"number","connect.type":"float64"}`, ""},
		// BOOLEAN: everit prints "type" after the common keywords
		{"boolean titled", `{"type":"boolean","name":"flag"}`, `{"title":"flag","type":"boolean"}`, "flag"},
		// BYTES: string + connect.type bytes (decimal.format BASE64)
		{"bytes", `{"type":"bytes"}`, `{"type":"string","connect.type":"bytes"}`, ""},
		// optional: oneOf [null, T], no title on the oneOf (name() is null)
		{"optional string", `{"type":"string","optional":true,"name":"n"}`, `{"oneOf":[{"type":"null"},{"type":"string","title":"n"}]}`, ""},
		// version and doc on the non-combined builder
		{"version doc", `{"type":"string","name":"io.debezium.data.Json","version":1,"doc":"d"}`,
			`{"type":"string","title":"io.debezium.data.Json","description":"d","connect.version":1}`, "io.debezium.data.Json"},
		// STRUCT: object, properties in HashMap order, connect.index per field, no required, additionalProperties left out (object.additional.properties=true)
		{"struct", `{"type":"struct","name":"r","fields":[{"field":"b","type":"string"},{"field":"a","type":"int32","optional":true}]}`,
			`{"type":"object","title":"r","properties":{"a":{"connect.index":1,"oneOf":[{"type":"null"},{"type":"integer","connect.type":"int32"}]},"b":{"type":"string","connect.index":0}}}`, "r"},
		// optional STRUCT: oneOf, the struct inside keeps title
		{"optional struct", `{"type":"struct","name":"r","optional":true,"fields":[]}`, `{"oneOf":[{"type":"null"},{"type":"object","title":"r"}]}`, ""},
		// MAP with string keys: object + additionalProperties
		{"map", `{"type":"map","keys":{"type":"string"},"values":{"type":"int64"}}`,
			`{"type":"object","connect.type":"map","additionalProperties":{"type":"integer","connect.type":"int64"}}`, ""},
		// parameters less io.confluent.connect.json.*
		{"parameters", `{"type":"string","parameters":{"a":"1","io.confluent.connect.json.x":"y"}}`, `{"type":"string","connect.parameters":{"a":"1"}}`, ""},
		// default: fromConnectData of it, org.json's number text
		{"default", `{"type":"double","default":2.0}`, `{"type":"number","default":2,"connect.type":"float64"}`, ""},
	} {
		s, err := connectschema.Parse([]byte(tc.schema))
		if err != nil {
			t.Fatal(err)
		}
		c, err := Compile(s)
		if err != nil {
			t.Fatalf("%s: %v", tc.rule, err)
		}
		if c.Schema() != tc.want || c.Name() != tc.name {
			t.Errorf("%s:\ngot  %s %q\nwant %s %q", tc.rule, c.Schema(), c.Name(), tc.want, tc.name)
		}
	}
}

func TestErrors(t *testing.T) {
	for _, tc := range []struct{ schema, payload, want string }{
		{`{"type":"int32"}`, `9191642889`, "9191642889 is not an int32"},
		{`{"type":"int64"}`, `1.5`, "1.5 is not an int64"},
		{`{"type":"string"}`, `null`, "payload is null and its schema is required"},
		{`{"type":"struct","fields":[{"field":"a","type":"boolean"}]}`, `{"a":"x"}`, "a: a JSON string for a Connect boolean"},
		{`{"type":"bytes"}`, `"%%"`, "not base64"},
		{`{"type":"bytes","name":"org.apache.kafka.connect.data.Decimal"}`, `1.5`, "decimal.format=NUMERIC"},
		{`{"type":"map","keys":{"type":"int32"},"values":{"type":"int32"}}`, `[[1]]`, "not a [key,value] pair"},
		{`{"type":"string"}`, `"a" "b"`, "after top-level value"},
	} {
		s, err := connectschema.Parse([]byte(tc.schema))
		if err != nil {
			t.Fatal(err)
		}
		c, err := Compile(s)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Append(nil, []byte(tc.payload)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Append(%s, %s) = %v, want %q", tc.schema, tc.payload, err, tc.want)
		}
	}
	for _, sch := range []string{
		`{"type":"struct","name":"io.confluent.connect.json.OneOf","fields":[]}`,
		`{"type":"string","parameters":{"org.apache.kafka.connect.data.Enum":"a"}}`,
	} {
		s, err := connectschema.Parse([]byte(sch))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Compile(s); err == nil || !strings.Contains(err.Error(), "not supported") {
			t.Errorf("Compile(%s) = %v", sch, err)
		}
	}
}

// TestJava pins the JVM behaviours against what OpenJDK 17 and Temurin 25
// printed for the same inputs (java.util.HashMap, Double/Float/BigDecimal
// .toString; the doubles as 25 prints them, see javaDouble).
func TestJava(t *testing.T) {
	for _, tc := range []struct {
		keys             []string
		put, copy, sized string
	}{
		{[]string{"id", "orderId", "amount", "paid", "lines", "ship", "codes"}, "codes,amount,orderId,paid,ship,id,lines", "codes,amount,orderId,paid,ship,id,lines", "codes,amount,orderId,paid,ship,id,lines"},
		{[]string{"payload", "type", "retry_count"}, "payload,retry_count,type", "type,payload,retry_count", "type,payload,retry_count"},
		{[]string{"connect.type", "connect.version", "connect.parameters", "connect.index"}, "connect.version,connect.index,connect.type,connect.parameters", "connect.index,connect.version,connect.type,connect.parameters", "connect.index,connect.version,connect.type,connect.parameters"},
		{[]string{"connect.type", "connect.version", "connect.index"}, "connect.version,connect.index,connect.type", "connect.index,connect.version,connect.type", "connect.index,connect.version,connect.type"},
		{[]string{"sku", "qty", "gift"}, "gift,qty,sku", "gift,sku,qty", "gift,sku,qty"},
		{strings.Split("a,b,c,d,e,f,g,h,i,j,k,l,m,n,o", ","), "a,b,c,d,e,f,g,h,i,j,k,l,m,n,o", "a,b,c,d,e,f,g,h,i,j,k,l,m,n,o", "a,b,c,d,e,f,g,h,i,j,k,l,m,n,o"},
	} {
		put := newHashMapPut(tc.keys)
		if got := strings.Join(put, ","); got != tc.put {
			t.Errorf("put %v = %s, want %s", tc.keys, got, tc.put)
		}
		if got := strings.Join(hashMapCopy(put), ","); got != tc.copy {
			t.Errorf("copy %v = %s, want %s", tc.keys, got, tc.copy)
		}
		if got := strings.Join(hashMapSized(put), ","); got != tc.sized {
			t.Errorf("sized %v = %s, want %s", tc.keys, got, tc.sized)
		}
	}
	// Java 17 prints 8.41E21 as 8.409999999999999E21 (JDK-4511638, fixed
	// in 19); 19 and later print the shortest digits, at least two.
	doubles := []float64{199.0, 1e7, 1e-3, 9.999e-4, 1234567.0, 0.30000000000000004, 1e20, 2e-10, 100.0, 3.14, 2.0e-3, 8.41e21, 5e-324}
	want := "199.0 1.0E7 0.001 9.999E-4 1234567.0 0.30000000000000004 1.0E20 2.0E-10 100.0 3.14 0.002 8.41E21 4.9E-324"
	var got []string
	for _, d := range doubles {
		got = append(got, javaDouble(d))
	}
	if strings.Join(got, " ") != want {
		t.Errorf("Double.toString: %s, want %s", strings.Join(got, " "), want)
	}
	got = nil
	for _, f := range []float32{1.1, 1e10, 3.4028235e38, 0.001, 123456.7} {
		got = append(got, javaFloat(f))
	}
	if s := strings.Join(got, " "); s != "1.1 1.0E10 3.4028235E38 0.001 123456.7" {
		t.Errorf("Float.toString: %s", s)
	}
	got = nil
	for _, b := range []string{"1.0E20", "1.0E-10", "1.234E-5", "1.5E7", "9.999E-4"} {
		got = append(got, bigDecimalText(b))
	}
	if s := strings.Join(got, " "); s != "1.0E+20 1.0E-10 0.00001234 1.5E+7 0.0009999" {
		t.Errorf("BigDecimal.toString: %s", s)
	}
}

func FuzzAppend(f *testing.F) {
	for _, tc := range handCases(f) {
		f.Add(tc.schema, tc.payload)
	}
	f.Fuzz(func(t *testing.T, schema, payload []byte) {
		s, err := connectschema.Parse(schema)
		if err != nil {
			return
		}
		c, err := Compile(s)
		if err != nil {
			return
		}
		if !json.Valid([]byte(c.Schema())) {
			t.Fatalf("schema not JSON: %s", c.Schema())
		}
		body, err := c.Append([]byte("x"), payload)
		if err != nil {
			if string(body) != "x" {
				t.Fatalf("error %v but dst changed: %q", err, body)
			}
			return
		}
		if !json.Valid(body[1:]) {
			t.Fatalf("body not JSON: %s (payload %s)", body[1:], payload)
		}
		again, err := c.Append(nil, body[1:])
		if err != nil || !bytes.Equal(again, body[1:]) {
			t.Fatalf("body not stable: %s → %s, %v", body[1:], again, err)
		}
	})
}

func BenchmarkAppend(b *testing.B) {
	rec := `{"schema":{"type":"struct","fields":[{"type":"int32","optional":true,"field":"id"},{"type":"int64","optional":true,"field":"orderId"},{"type":"double","optional":true,"field":"amount"},{"type":"boolean","optional":true,"field":"paid"},{"type":"array","items":{"type":"struct","fields":[{"type":"string","optional":true,"field":"sku"},{"type":"int32","optional":true,"field":"qty"},{"type":"boolean","optional":true,"field":"gift"}],"optional":true,"name":"payload.lines"},"optional":true,"field":"lines"},{"type":"struct","fields":[{"type":"string","optional":true,"field":"city"}],"optional":true,"name":"payload.ship","field":"ship"},{"type":"array","items":{"type":"string","optional":true},"optional":true,"field":"codes"}],"optional":true,"name":"payload"},"payload":{"id":7,"orderId":9191642889,"amount":199.00,"paid":true,"note":null,"tags":[],"lines":[{"sku":"a","qty":1},{"sku":"b","gift":true}],"ship":{"city":"Oslo"},"codes":["x","y"]}}`
	sch, pay, err := connectschema.SplitEnvelope([]byte(rec))
	if err != nil {
		b.Fatal(err)
	}
	s, err := connectschema.Parse(sch)
	if err != nil {
		b.Fatal(err)
	}
	c, err := Compile(s)
	if err != nil {
		b.Fatal(err)
	}
	var dst []byte
	b.SetBytes(int64(len(pay)))
	b.ReportAllocs()
	for b.Loop() {
		if dst, err = c.Append(dst[:0], pay); err != nil {
			b.Fatal(err)
		}
	}
}

// Regression: map entries were written in sorted key order, and -0.0 and
// 5e-324 as Go prints them; the Java converter writes a map in the order of
// the HashMap JsonConverter fills (ties in the payload's order), 0.0 (the
// payload's number is read as a BigDecimal) and 4.9E-324. The wants are
// what JsonConverter 4.1.1 + the JsonSchemaData rules printed on Temurin 25.
func TestMapOrderAndNumbers(t *testing.T) {
	for _, tc := range []struct{ schema, payload, want string }{
		{`{"type":"map","keys":{"type":"string"},"values":{"type":"int32"}}`, `{"q":1,"a":2,"b":3}`, `{"q":1,"a":2,"b":3}`},
		{`{"type":"map","keys":{"type":"int32"},"values":{"type":"string"}}`, `[[17,"x"],[1,"y"],[2,"z"],[-1,"w"]]`,
			`[{"key":-1,"value":"w"},{"key":17,"value":"x"},{"key":1,"value":"y"},{"key":2,"value":"z"}]`},
		{`{"type":"map","keys":{"type":"int64"},"values":{"type":"boolean"}}`, `[[4294967296,true],[1,false],[0,true]]`,
			`[{"key":0,"value":true},{"key":4294967296,"value":true},{"key":1,"value":false}]`},
		{`{"type":"array","items":{"type":"double"}}`, `[-0.0,5e-324,8.41e21]`, `[0.0,4.9E-324,8.41E21]`},
	} {
		got, err := codecOf(t, tc.schema).Append(nil, []byte(tc.payload))
		if err != nil || string(got) != tc.want {
			t.Errorf("Append(%s) = %s, %v; want %s", tc.payload, got, err, tc.want)
		}
	}
}

// A required field without a value is left out of the body, as
// fromConnectData leaves out a null JsonNode (JsonConverter would have
// refused the record before: the router never writes one).
func TestRequiredNullLeftOut(t *testing.T) {
	s, err := connectschema.Parse([]byte(`{"type":"struct","fields":[{"field":"a","type":"string"},{"field":"b","type":"int32","optional":true}]}`))
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.Append(nil, []byte(`{"a":null}`)); err != nil || string(got) != `{"b":null}` {
		t.Fatalf("got %s, %v", got, err)
	}
}

// Regression: appendFloat refused "NaN", "Infinity" and "-Infinity", the
// strings JsonConverter writes for a double precision or real column that
// is not finite, and a number beyond a double's range. JsonSchemaConverter
// writes the DoubleNode (FloatNode) with Jackson's JsonGenerator, whose
// QUOTE_NON_NUMERIC_NUMBERS (on by default, kept by Jackson.newObjectMapper)
// writes a non-finite number as the string of Java's text.
func TestNonFiniteFloats(t *testing.T) {
	const rec = `{"type":"struct","fields":[{"field":"d","type":"double","optional":true},{"field":"f","type":"float","optional":true}]}`
	for _, tc := range []struct{ payload, want string }{
		{`{"d":"NaN","f":"NaN"}`, `{"d":"NaN","f":"NaN"}`},
		{`{"d":"Infinity","f":"-Infinity"}`, `{"d":"Infinity","f":"-Infinity"}`},
		{`{"d":1e400,"f":-1e39}`, `{"d":"Infinity","f":"-Infinity"}`},
		{`{"d":-1e400,"f":3.4e38}`, `{"d":"-Infinity","f":3.4E38}`},
		{`{"d":1.5,"f":null}`, `{"d":1.5,"f":null}`},
	} {
		got, err := codecOf(t, rec).Append(nil, []byte(tc.payload))
		if err != nil || string(got) != tc.want {
			t.Errorf("Append(%s) = %s, %v; want %s", tc.payload, got, err, tc.want)
		}
	}
	for _, bad := range []string{`"nan"`, `"Inf"`, `""`} {
		if _, err := codecOf(t, `{"type":"double"}`).Append(nil, []byte(bad)); err == nil || !strings.Contains(err.Error(), "a JSON string for a Connect double") {
			t.Errorf("Append(%s) = %v, want a refusal", bad, err)
		}
	}
}

// codecOf compiles a Connect schema in JsonConverter's layout.
func codecOf(t *testing.T, schema string) *Codec {
	t.Helper()
	s, err := connectschema.Parse([]byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The encode path builds no path strings and decodes no keys unless it
// must: a struct of more than maxStackFields fields, a key with escapes
// and an error's path still work.
func TestStructKeysAndPaths(t *testing.T) {
	var fields, payload, want strings.Builder
	for i := range maxStackFields + 2 {
		if i > 0 {
			fields.WriteString(",")
			payload.WriteString(",")
			want.WriteString(",")
		}
		fmt.Fprintf(&fields, `{"field":"f%d","type":"int32"}`, i)
		fmt.Fprintf(&payload, `"f%d":%d`, i, i)
		fmt.Fprintf(&want, `"f%d":%d`, i, i)
	}
	c := codecOf(t, `{"type":"struct","fields":[`+fields.String()+`,{"field":"a","type":"string","optional":true}]}`)
	got, err := c.Append(nil, []byte(`{"\u0061":"x",`+payload.String()+`,"\u0061":"y"}`))
	if w := `{` + want.String() + `,"a":"y"}`; err != nil || string(got) != w {
		t.Errorf("got %s, %v; want %s", got, err, w)
	}
	c = codecOf(t, `{"type":"struct","fields":[{"field":"l","type":"array","items":{"type":"map","keys":{"type":"string"},"values":{"type":"struct","fields":[{"field":"n","type":"int16"}]}}}]}`)
	if _, err := c.Append(nil, []byte(`{"l":[{},{"k":{"n":1},"k2":{"n":70000}}]}`)); err == nil || err.Error() != "encoding a JSON Schema body: l[1]{k2}.n: 70000 is not an int16" {
		t.Errorf("error %v", err)
	}
}
