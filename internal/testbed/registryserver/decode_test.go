package main

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"os/exec"
	"strings"
	"testing"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
)

// zigzag appends an Avro int or long.
func zigzag(dst []byte, v int64) []byte {
	return binary.AppendUvarint(dst, uint64(v<<1^v>>63))
}

func avroString(dst []byte, s string) []byte {
	return append(zigzag(dst, int64(len(s))), s...)
}

func wire(id int, body []byte) []byte {
	return append(binary.BigEndian.AppendUint32([]byte{0}, uint32(id)), body...)
}

func register(t *testing.T, reg, subject, schemaType, schema string) int {
	t.Helper()
	req, _ := json.Marshal(map[string]string{"schemaType": schemaType, "schema": schema})
	code, body := do(t, "POST", reg+"/subjects/"+subject+"/versions", string(req), "Bearer tok")
	var resp struct{ ID int }
	if code != 200 || json.Unmarshal([]byte(body), &resp) != nil || resp.ID == 0 {
		t.Fatalf("register %s: %d %s", subject, code, body)
	}
	return resp.ID
}

// TestRegistryDecode runs scripts/registry-decode.py against the server
// with a hand-built Avro body and a JSON Schema body, in the three input
// forms, and checks what it refuses.
func TestRegistryDecode(t *testing.T) {
	python := testbed.Python(t)
	s := startTest(t, config{auth: "Bearer tok"})
	reg := s.registryURL()
	avroID := register(t, reg, "orders-value", "AVRO", `{"type":"record","name":"Value","namespace":"order_db","fields":[`+
		`{"name":"id","type":"long"},{"name":"note","type":["null","string"],"default":null},`+
		`{"name":"raw","type":"bytes"},{"name":"day","type":{"type":"int","logicalType":"date","connect.name":"org.apache.kafka.connect.data.Date"}},`+
		`{"name":"amount","type":"double"},{"name":"tags","type":{"type":"map","values":"int"}}]}`)
	jsonID := register(t, reg, "orders-key", "JSON", `{"type":"object","title":"k","properties":{"id":{"type":"integer","connect.index":0,"connect.type":"int64"}}}`)

	var body []byte
	body = zigzag(body, 9191642889)                                        // id
	body = avroString(zigzag(body, 1), "é\n")                              // note: union branch 1
	body = append(zigzag(body, 3), 1, 2, 3)                                // raw
	body = zigzag(body, 20161)                                             // day
	body = binary.LittleEndian.AppendUint64(body, math.Float64bits(199.5)) // amount
	body = zigzag(body, 1)                                                 // tags: one block of 1
	body = zigzag(avroString(body, "x"), -7)
	body = zigzag(body, 0) // end of the map
	avroRec := wire(avroID, body)
	jsonRec := wire(jsonID, []byte(`{"id":9223372036854775807}`))
	badJSON := wire(jsonID, []byte(`{"id":"x"}`))

	in := hex.EncodeToString(avroRec) + "\n" +
		base64.StdEncoding.EncodeToString(jsonRec) + "\n" +
		`{"key":"` + hex.EncodeToString(jsonRec) + `","value":"` + base64.StdEncoding.EncodeToString(avroRec) + `","offset":5}` + "\n" +
		`{"key":"` + hex.EncodeToString(jsonRec) + `","value":null}` + "\n"
	out, stderr, err := runDecode(t, python, reg, in, "--bearer", "tok")
	if err != nil {
		t.Fatalf("registry-decode: %v\n%s", err, stderr)
	}
	wantAvro := `{"id":9191642889,"note":"é\n","raw":"AQID","day":20161,"amount":199.5,"tags":{"x":-7}}`
	wantAvro = strings.Replace(wantAvro, "\n", `\n`, 1)
	want := wantAvro + "\n" +
		`{"id":9223372036854775807}` + "\n" +
		`{"key":{"id":9223372036854775807},"value":` + wantAvro + `,"offset":5}` + "\n" +
		`{"key":{"id":9223372036854775807},"value":null}` + "\n"
	if out != want {
		t.Fatalf("got\n%s\nwant\n%s", out, want)
	}

	// refused: a body the JSON Schema does not accept, a wrong magic byte,
	// an unknown id, and no credentials
	bad := base64.StdEncoding.EncodeToString(badJSON) + "\n" + "01" + hex.EncodeToString(jsonRec[1:]) + "\n" +
		hex.EncodeToString(wire(99, []byte("{}"))) + "\n"
	out, stderr, err = runDecode(t, python, reg, bad, "--bearer", "tok")
	if err == nil || out != "" {
		t.Fatalf("bad records decoded: %q %v", out, err)
	}
	for _, w := range []string{"line 1: schema 2: the body is not valid", "line 2: magic byte 1, not 0", "line 3: GET " + reg + "/schemas/ids/99: HTTP 404"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
	if _, stderr, err = runDecode(t, python, reg, hex.EncodeToString(jsonRec)+"\n"); err == nil || !strings.Contains(stderr, "HTTP 401") {
		t.Fatalf("no credentials: %v %s", err, stderr)
	}
}

func runDecode(t *testing.T, python, reg, in string, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command(python, append([]string{"../../../scripts/registry-decode.py", "--registry", reg}, args...)...)
	cmd.Stdin = strings.NewReader(in)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}
