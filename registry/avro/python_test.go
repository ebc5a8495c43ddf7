package avro

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/outboxrelay/outboxrelay/internal/connectschema"
	"github.com/outboxrelay/outboxrelay/internal/testbed"
)

// pyCase is one body for the Python decoder and what it must read.
type pyCase struct {
	what   string
	schema string
	body   []byte
	want   []byte // project's JSON of the payload
}

// TestPythonDecode has Apache Avro's Python library (avro.io.DatumReader,
// the writer schema parsed from our registered text by avro.schema.parse)
// read every body of the golden cases and of the router's records, and
// compares what it reads with what the JsonConverter payload means.
func TestPythonDecode(t *testing.T) {
	python := testbed.Python(t)
	var cases []pyCase
	add := func(what string, s *connectschema.Schema, c *Codec, payload string) {
		body, err := c.Append(nil, []byte(payload))
		if err != nil {
			t.Fatalf("%s: Append(%s): %v", what, payload, err)
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
		cases = append(cases, pyCase{what, c.Schema(), body, want})
	}
	for _, tc := range schemaCases() {
		s, c := compileCase(t, tc.schema)
		for _, p := range tc.payloads {
			add(tc.name, s, c, p)
		}
	}
	for _, r := range routerHalves(t) {
		if _, refused := routerMismatch(r.what, r.payload); refused {
			continue
		}
		s, c := compileCase(t, string(r.schema))
		add(r.what, s, c, string(r.payload))
	}
	var in bytes.Buffer
	for _, pc := range cases {
		line, _ := json.Marshal(map[string]string{"schema": pc.schema, "body": base64.StdEncoding.EncodeToString(pc.body)})
		in.Write(append(line, '\n'))
	}
	cmd := exec.Command(python, "testdata/avrodecode.py")
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("avrodecode.py: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(cases) {
		t.Fatalf("avrodecode.py answered %d lines for %d bodies", len(lines), len(cases))
	}
	for i, pc := range cases {
		if strings.HasPrefix(lines[i], `{"error":`) {
			t.Errorf("%s: Python's avro refused the body % x with the schema %s: %s", pc.what, pc.body, pc.schema, lines[i])
			continue
		}
		if err := sameJSON([]byte(lines[i]), pc.want, true); err != nil {
			t.Errorf("%s: Python's avro read\n%v", pc.what, err)
		}
	}
	t.Logf("%d bodies decoded by PyPI avro", len(cases))
}

type routerHalf struct {
	what            string
	schema, payload []byte
}

// routerHalves are the keys and values with a schema in
// testdata/router-records.jsonl.
func routerHalves(t testing.TB) []routerHalf {
	f, err := os.Open("testdata/router-records.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []routerHalf
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var rec struct{ Case, Key, Value string }
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		for _, half := range []string{rec.Key, rec.Value} {
			if !strings.HasPrefix(half, `{"schema":`) {
				continue
			}
			schema, payload, err := connectschema.SplitEnvelope([]byte(half))
			if err != nil {
				t.Fatalf("%s: %v", rec.Case, err)
			}
			out = append(out, routerHalf{rec.Case, schema, payload})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
