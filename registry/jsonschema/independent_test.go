package jsonschema

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/outboxrelay/outboxrelay/internal/connectschema"
	"github.com/outboxrelay/outboxrelay/internal/testbed"
)

// TestIndependentValidation hands every case's schema, body and payload to
// python-jsonschema (testdata/validate.py): the schema is a valid draft-07
// schema, the body is valid against it and holds the payload's values.
func TestIndependentValidation(t *testing.T) {
	python := testbed.Python(t)
	cases := append(handCases(t), routerCases(t)...)
	var in bytes.Buffer
	for _, tc := range cases {
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
		line, _ := json.Marshal(map[string]string{"case": tc.name, "schema": c.Schema(), "body": string(body), "payload": string(tc.payload)})
		in.Write(append(line, '\n'))
	}
	out, err := validate(python, in.Bytes())
	if err != nil {
		t.Fatalf("validate.py: %v\n%s", err, out)
	}
	if n := strings.Count(out, "ok "); n != len(cases) {
		t.Fatalf("validate.py passed %d of %d cases:\n%s", n, len(cases), out)
	}
	t.Logf("python-jsonschema validated %d bodies against their schemas", len(cases))

	// The check is not vacuous: a body of the wrong type, and one whose
	// value differs from the payload, fail.
	bad := `{"case":"wrong-type","schema":"{\"type\":\"integer\",\"connect.type\":\"int64\"}","body":"\"7\"","payload":"7"}
{"case":"wrong-value","schema":"{\"type\":\"integer\",\"connect.type\":\"int64\"}","body":"9191642888","payload":"9191642889"}
`
	out, err = validate(python, []byte(bad))
	if err == nil || !strings.Contains(out, "FAIL wrong-type") || !strings.Contains(out, "FAIL wrong-value") {
		t.Fatalf("validate.py accepted bad bodies: %v\n%s", err, out)
	}
}

func validate(python string, in []byte) (string, error) {
	cmd := exec.Command(python, "testdata/validate.py")
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
