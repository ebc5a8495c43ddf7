package avro

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/outboxrelay/outboxrelay/internal/connectschema"
)

// fuzzSchemas are the schemas of the golden cases and of the router's
// records, the payloads their seeds.
func fuzzSchemas(f *testing.F) (schemas []string, payloads [][2]string) {
	for _, tc := range schemaCases() {
		schemas = append(schemas, tc.schema)
		for _, p := range tc.payloads {
			payloads = append(payloads, [2]string{tc.schema, p})
		}
	}
	file, err := os.Open("testdata/router-records.jsonl")
	if err != nil {
		f.Fatal(err)
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var rec struct{ Value string }
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			f.Fatal(err)
		}
		if s, p, err := connectschema.SplitEnvelope([]byte(rec.Value)); err == nil && len(p) < 2000 {
			schemas = append(schemas, string(s))
			payloads = append(payloads, [2]string{string(s), string(p)})
		}
	}
	return schemas, payloads
}

// FuzzAppend: Append never panics, and a payload it encodes decodes back
// (with the tests' own Avro reader, using every byte) to what the payload
// means, and re-encodes to the same bytes.
func FuzzAppend(f *testing.F) {
	schemas, payloads := fuzzSchemas(f)
	index := map[string]int{}
	for i, s := range schemas {
		index[s] = i
	}
	for _, p := range payloads {
		f.Add(uint16(index[p[0]]), []byte(p[1]))
		if len(p[1]) > 2 && p[1][0] == '{' && p[1][1] != '}' {
			// every key twice: the last values count
			f.Add(uint16(index[p[0]]), []byte(p[1][:len(p[1])-1]+","+p[1][1:]))
		}
	}
	codecs := make([]*Codec, len(schemas))
	parsed := make([]*connectschema.Schema, len(schemas))
	for i, src := range schemas {
		s, err := connectschema.Parse([]byte(src))
		if err != nil {
			f.Fatal(err)
		}
		if codecs[i], err = Compile(s); err != nil {
			f.Fatal(err)
		}
		parsed[i] = s
	}
	f.Fuzz(func(t *testing.T, which uint16, payload []byte) {
		i := int(which) % len(codecs)
		c := codecs[i]
		body, err := c.Append([]byte{1, 2}, payload)
		if err != nil {
			if !bytes.Equal(body, []byte{1, 2}) {
				t.Fatalf("Append failed but changed dst: % x", body)
			}
			return
		}
		roundTrip(t, parsed[i], c, string(payload))
	})
}

// FuzzCompile: Compile never panics on a schema connectschema reads, and
// what it compiles is JSON.
func FuzzCompile(f *testing.F) {
	schemas, _ := fuzzSchemas(f)
	for _, s := range schemas {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		s, err := connectschema.Parse(src)
		if err != nil {
			return
		}
		c, err := Compile(s)
		if err != nil {
			return
		}
		if !json.Valid([]byte(c.Schema())) {
			t.Fatalf("schema text is not JSON: %s", c.Schema())
		}
		if _, err := c.Append(nil, []byte("null")); err != nil && c.root.onNull != nil {
			t.Fatalf("null with an onNull body: %v", err)
		}
	})
}
