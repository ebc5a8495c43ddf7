package conformance

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
)

// Environment of TestConformance.
const (
	// EnvMode: unset runs the reduced form (cases marked `-- ci: yes`);
	// "all" runs every case and writes testdata/conformance/REPORT.md;
	// "off" skips the test.
	EnvMode = "OUTBOXRELAY_CONFORMANCE"
	// EnvCases, a regular expression, picks cases by id.
	EnvCases = "OUTBOXRELAY_CONFORMANCE_CASES"
	// EnvParallel is how many cases run at once (default 3).
	EnvParallel = "OUTBOXRELAY_CONFORMANCE_PARALLEL"
	// EnvConnect is a running Connect worker's REST URL (scripts/debezium
	// up prints it); unset, the test starts one and stops it at the end.
	EnvConnect = "OUTBOXRELAY_DEBEZIUM_URL"
	// EnvRelayBin is a prebuilt outboxrelay binary; unset, the test builds
	// one from this tree.
	EnvRelayBin = "OUTBOXRELAY_RELAY_BIN"
	// EnvReport is where the report goes; unset, a full run writes
	// testdata/conformance/REPORT.md and any other run a file in $TMPDIR.
	EnvReport = "OUTBOXRELAY_CONFORMANCE_REPORT"
)

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestConformance runs the SQL cases of testdata/conformance through
// Debezium and outboxrelay and fails on any undocumented difference.
func TestConformance(t *testing.T) {
	mode := os.Getenv(EnvMode)
	if mode == "off" {
		t.Skipf("skipping: %s=off", EnvMode)
	}
	pg, brokers := testbed.Postgres(t), testbed.KafkaBrokers(t)
	root := repoRoot(t)
	version := serverVersion(t, pg)
	selected, pick := selectCases(t, root, mode, func(c *Case) bool {
		if c.Messages() && version < 140000 {
			t.Logf("%s: not run on server_version_num %d: pgoutput sends logical decoding messages from PostgreSQL 14 on", c.ID, version)
			return false
		}
		return true
	})
	parallel := 3
	if s := os.Getenv(EnvParallel); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive number", EnvParallel, s)
		}
		parallel = n
	}

	t0 := time.Now()
	connectURL, connectInfo := startConnect(t, root)
	work := t.TempDir()
	bin := relayBinary(t, root, work)
	env := &Env{
		PGURL: pg, Brokers: brokers, ConnectURL: connectURL, RelayBin: bin, Root: root,
		RunID:   strconv.FormatInt(time.Now().UnixNano()/1e6%(36*36*36*36*36), 36),
		WorkDir: work, Timeout: 60 * time.Second, Quiet: 1500 * time.Millisecond,
		Logf: t.Logf,
	}

	verdicts := runCases(env, selected, parallel, AgainstDebezium)
	elapsed := time.Since(t0)

	var report bytes.Buffer
	info := ReportInfo{
		Title:   "Conformance: outboxrelay against Debezium",
		Command: "OUTBOXRELAY_CONFORMANCE=all go test ./internal/conformance -run TestConformance -v -timeout 30m",
		Started: t0.UTC().Format("2006-01-02 15:04 UTC") + fmt.Sprintf(" (%d cases in %.0f s, %d at a time)", len(selected), elapsed.Seconds(), parallel),
		Connect: connectInfo,
	}
	if mode != "all" {
		info.Title = "Conformance, reduced form (make test)"
		info.Command = "go test ./internal/conformance -run TestConformance"
	}
	if err := WriteReport(&report, info, verdicts); err != nil {
		t.Fatal(err)
	}
	out := os.Getenv(EnvReport)
	if out == "" {
		out = filepath.Join(os.TempDir(), "outboxrelay-conformance-"+env.RunID+".md")
	}
	if mode == "all" && pick == nil && os.Getenv(EnvReport) == "" {
		out = filepath.Join(root, "testdata", "conformance", "REPORT.md")
	}
	if err := os.WriteFile(out, report.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("report: %s (%d cases in %.1f s)", out, len(selected), elapsed.Seconds())
	for _, v := range verdicts {
		t.Logf("%-34s %-33s %s", v.Case.ID, v.Summary(), strings.Join(v.Observed, ", "))
		if v.Err != nil {
			t.Errorf("%s: %v", v.Case.ID, v.Err)
		}
		for _, p := range v.Problems {
			t.Errorf("%s: undocumented difference: %s", v.Case.ID, p)
		}
	}
}

// selectCases loads the cases of testdata/conformance and returns those of
// the run's mode (every case for "all", else those marked `-- ci: yes`)
// that EnvCases picks and keep accepts, with EnvCases' expression (nil when
// unset); it fails the test when none is left.
func selectCases(t *testing.T, root, mode string, keep func(*Case) bool) ([]*Case, *regexp.Regexp) {
	t.Helper()
	cases, err := LoadCases(filepath.Join(root, "testdata", "conformance"))
	if err != nil {
		t.Fatal(err)
	}
	var pick *regexp.Regexp
	if s := os.Getenv(EnvCases); s != "" {
		pick = regexp.MustCompile(s)
	}
	var selected []*Case
	for _, c := range cases {
		if (mode == "all" || c.CI) && (pick == nil || pick.MatchString(c.ID)) && keep(c) {
			selected = append(selected, c)
		}
	}
	if len(selected) == 0 {
		t.Fatalf("no case selected (mode %q, %s=%q)", mode, EnvCases, os.Getenv(EnvCases))
	}
	return selected, pick
}

// relayBinary is EnvRelayBin, or an outboxrelay built from this tree into
// work.
func relayBinary(t *testing.T, root, work string) string {
	t.Helper()
	if bin := os.Getenv(EnvRelayBin); bin != "" {
		return bin
	}
	bin := filepath.Join(work, "outboxrelay")
	build := exec.Command("go", "build", "-o", bin, "github.com/outboxrelay/outboxrelay/cmd/outboxrelay")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building outboxrelay: %v\n%s", err, out)
	}
	return bin
}

// runCases runs the cases in mode, parallel at a time, each within 5
// minutes, and returns their verdicts in the cases' order.
func runCases(env *Env, cases []*Case, parallel int, mode Mode) []*Verdict {
	verdicts := make([]*Verdict, len(cases))
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i, c := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			idx, _ := strconv.Atoi(strings.SplitN(c.ID, "-", 2)[0])
			verdicts[i] = env.Run(ctx, c, idx, mode)
		}()
	}
	wg.Wait()
	return verdicts
}

// serverVersion is the bed's server_version_num.
func serverVersion(t *testing.T, dsn string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var v int
	if err := conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// startConnect returns the URL of a Connect worker with Debezium: the one
// in $OUTBOXRELAY_DEBEZIUM_URL, or one started now with scripts/debezium up
// and stopped at the end.
func startConnect(t *testing.T, root string) (url, info string) {
	t.Helper()
	const versions = "Kafka Connect 4.1.1 standalone, Debezium 3.7.1.Final PostgreSQL connector and EventRouter " +
		"(debezium-connect-plugins), key StringConverter, value JsonConverter schemas.enable=false"
	if u := os.Getenv(EnvConnect); u != "" {
		return u, versions
	}
	script := filepath.Join(root, "scripts", "debezium")
	// A worker of our own, in its own state directory: concurrent runs on a
	// shared machine must not find, reuse or stop each other's.
	state, err := os.MkdirTemp("", "outboxrelay-conformance-connect-")
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "OUTBOXRELAY_DEBEZIUM_DIR="+state)
	t0 := time.Now()
	cmd := exec.Command(script, "up")
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("scripts/debezium up: %v\n%s", err, stderr.String())
	}
	t.Cleanup(func() {
		down := exec.Command(script, "down")
		down.Env = env
		if out, err := down.CombinedOutput(); err != nil {
			t.Errorf("scripts/debezium down: %v\n%s", err, out)
		}
		os.RemoveAll(state)
	})
	m := regexp.MustCompile(`OUTBOXRELAY_DEBEZIUM_URL='([^']+)'`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("scripts/debezium up printed no URL: %s", out)
	}
	return string(m[1]), fmt.Sprintf("%s; started by the test, REST up %.1f s after launch", versions, time.Since(t0).Seconds())
}
