package conformance

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
	"github.com/outboxrelay/outboxrelay/router"
)

// TestConformanceConverters runs the cases (those of make test; every case
// with OUTBOXRELAY_CONFORMANCE=all) through outboxrelay with AvroConverter
// and with JsonSchemaConverter for key and value, against the bed's
// registry (registryserver), decodes every record with Apache Avro's
// Python library or checks it with python-jsonschema against the schema
// fetched from the registry by id (scripts/registry-decode.py), and fails
// unless each is the JSON the case's JsonConverter gives. It logs the
// subjects registered and their schemas.
func TestConformanceConverters(t *testing.T) {
	mode := testMode(t)
	pg, brokers := testbed.Postgres(t), testbed.KafkaBrokers(t)
	python := testbed.Python(t)
	root := repoRoot(t)
	selected, _ := selectCases(t, root, mode, ConverterComparable)
	work := t.TempDir()
	bin := relayBinary(t, root, work)
	for i, class := range []string{router.AvroConverterClass, router.JSONSchemaConverterClass} {
		t.Run(class[strings.LastIndexByte(class, '.')+1:], func(t *testing.T) {
			reg := testbed.StartRegistry(t)
			env := &Env{
				PGURL: pg, Brokers: brokers, RelayBin: bin, Root: root,
				RunID:   fmt.Sprintf("r%d", i) + strconv.FormatInt(time.Now().UnixNano()/1e6%(36*36*36*36), 36),
				WorkDir: work, Timeout: 60 * time.Second, Quiet: 1500 * time.Millisecond, Logf: t.Logf,
				Registry: &Registry{URL: reg.URL, Class: class, Decode: pythonDecoder(python, root)},
			}
			verdicts := runCases(env, selected, 3, ConverterAgainstJSON)
			for _, v := range verdicts {
				if want, ok := converterStops[class][v.Case.ID]; ok {
					if v.Err == nil || !strings.Contains(v.Err.Error(), want) {
						t.Errorf("%s: want the relay to stop with %q, as %s fails the task; got %v (%s)", v.Case.ID, want, class, v.Err, v.Summary())
					} else {
						t.Logf("%-34s stopped as %s stops: %q", v.Case.ID, class, want)
					}
					continue
				}
				verdict := v.Summary()
				if v.Passed() {
					verdict = "same JSON"
					if len(v.Observed) > 0 {
						verdict += " (documented: " + strings.Join(v.Observed, ", ") + ")"
					}
				}
				t.Logf("%-34s JsonConverter %d records, %s %d: %s", v.Case.ID, v.Debezium, class, v.Relay, verdict)
				if v.Err != nil {
					t.Errorf("%s: %v", v.Case.ID, v.Err)
				}
				for _, p := range v.Problems {
					t.Errorf("%s: %s differs from JsonConverter: %s", v.Case.ID, class, p)
				}
			}
			logSubjects(t, reg.URL)
		})
	}
}

// converterStops are the cases a registry converter cannot write, as
// Confluent's cannot: the relay stops (errors.tolerance=none, Connect's
// default, fails the task), with the error's text.
var converterStops = map[string]map[string]string{
	// A payload field named k"ey: Avro names are letters, digits and _
	// (AvroData with scrub.invalid.names=false, AvroConverter's default).
	router.AvroConverterClass: {"19-unicode": `the field name "k\"ey": illegal character`},
}

// testMode is OUTBOXRELAY_CONFORMANCE; "off" skips the test.
func testMode(t *testing.T) string {
	mode := os.Getenv(EnvMode)
	if mode == "off" {
		t.Skipf("skipping: %s=off", EnvMode)
	}
	return mode
}

// pythonDecoder is Registry.Decode through scripts/registry-decode.py: one
// JSON line per record in, the same line with key and value decoded out.
func pythonDecoder(python, root string) func(context.Context, string, []Record) ([]Record, error) {
	return func(ctx context.Context, url string, recs []Record) ([]Record, error) {
		var in bytes.Buffer
		for _, r := range recs {
			line := map[string]any{"key": hexOrNil(r.Key), "value": hexOrNil(r.Value)}
			b, _ := json.Marshal(line)
			in.Write(append(b, '\n'))
		}
		cmd := exec.CommandContext(ctx, python, filepath.Join(root, "scripts", "registry-decode.py"), "--registry", url)
		cmd.Stdin = &in
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("registry-decode.py: %v: %s", err, stderr.String())
		}
		sc := bufio.NewScanner(bytes.NewReader(out))
		sc.Buffer(nil, 64<<20)
		decoded := make([]Record, 0, len(recs))
		for i := 0; sc.Scan(); i++ {
			var line struct{ Key, Value json.RawMessage }
			if err := json.Unmarshal(sc.Bytes(), &line); err != nil || i >= len(recs) {
				return nil, fmt.Errorf("registry-decode.py: line %d: %q: %v", i+1, sc.Text(), err)
			}
			r := recs[i]
			r.Key, r.Value = decodedOrNil(r.Key, line.Key), decodedOrNil(r.Value, line.Value)
			decoded = append(decoded, r)
		}
		if len(decoded) != len(recs) {
			return nil, fmt.Errorf("registry-decode.py decoded %d of %d records: %s", len(decoded), len(recs), stderr.String())
		}
		return decoded, nil
	}
}

func hexOrNil(b []byte) any {
	if b == nil {
		return nil
	}
	return hex.EncodeToString(b)
}

// decodedOrNil: a null key or value (a tombstone) stays nil; a record's
// null (an optional value that is null) is the JSON null.
func decodedOrNil(raw []byte, decoded json.RawMessage) []byte {
	if raw == nil {
		return nil
	}
	return decoded
}

// logSubjects logs each subject of the registry with its versions and
// the latest schema, so that the run shows what was registered.
func logSubjects(t *testing.T, url string) {
	get := func(path string, v any) error {
		resp, err := http.Get(url + path)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: HTTP %d %s", path, resp.StatusCode, b)
		}
		return json.Unmarshal(b, v)
	}
	var subjects []string
	if err := get("/subjects", &subjects); err != nil {
		t.Errorf("listing the registry's subjects: %v", err)
		return
	}
	sort.Strings(subjects)
	for _, s := range subjects {
		var versions []int
		var latest struct {
			ID     int    `json:"id"`
			Schema string `json:"schema"`
		}
		if err := get("/subjects/"+s+"/versions", &versions); err != nil {
			t.Errorf("subject %s: %v", s, err)
			continue
		}
		if err := get("/subjects/"+s+"/versions/latest", &latest); err != nil {
			t.Errorf("subject %s: %v", s, err)
			continue
		}
		t.Logf("registered: subject %s, versions %v, latest id %d: %s", s, versions, latest.ID, latest.Schema)
	}
}
