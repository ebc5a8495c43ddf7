package deploytest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
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

const (
	alertsFile    = "../../deploy/prometheus/alerts.yml"
	dashboardFile = "../../deploy/grafana/outboxrelay.json"
	// lagAlert is the alert the live test drives, its threshold and for:
	// scaled from 60 s and 5m to scaledLag and scaledFor.
	lagAlert  = "OutboxRelayLagSecondsHigh"
	scaledLag = "3"
	scaledFor = "5s"
)

// TestLivePrometheus: a real Prometheus scrapes a real relay every 2 s
// with deploy/prometheus/alerts.yml loaded, plus the lag alert with its
// threshold and for: scaled down to test time. Under load, with the
// private broker paused (SIGSTOP), the lag alert goes pending, then
// firing, and is inactive again after the broker resumes. Then every
// PromQL expression of the alerts and of the Grafana dashboard runs
// against that Prometheus: none may fail, every series name in them must
// be one the relay exports, and every dashboard query must return data.
func TestLivePrometheus(t *testing.T) {
	prom := prometheusBinary(t)
	b := testbed.StartPrivateBed(t)
	admin := b.Connect(t)
	prepareExample(t, admin)
	host, port := b.PostgresHostPort(t)
	// request.timeout.ms: produce requests to the paused broker time out
	// (and are retried) within the pause, so the error series exist.
	cfg := exampleConfig(t, t.TempDir(), host, port, map[string]string{"request.timeout.ms": "3000"})
	httpPort := freePort(t)
	startProcess(t, "relay", buildRelay(t), "run", "--config", cfg, "--kafka-brokers", b.KafkaBrokers,
		"--http-addr", "127.0.0.1:"+strconv.Itoa(httpPort), "--log-format", "text")
	waitReady(t, httpPort, 60*time.Second)
	api := startPrometheus(t, prom, httpPort)

	stopLoad := insertLoad(t, b.PostgresURL)
	defer stopLoad()
	// Streaming under load, its topic created: Prometheus has seen events
	// published, and the alert evaluated and not firing.
	waitQuery(t, api, `sum(increase(outboxrelay_events_published_total[10s])) > 0`, 60*time.Second)
	waitRule(t, api, "outboxrelay-scaled", "inactive", 30*time.Second)
	resume := b.PauseKafka(t)
	paused := time.Now()
	t.Logf("Kafka %s paused", b.KafkaBrokers)
	waitRule(t, api, "outboxrelay-scaled", "pending", 60*time.Second)
	pending := time.Since(paused)
	waitRule(t, api, "outboxrelay-scaled", "firing", 60*time.Second)
	firing := time.Since(paused)
	// request.timeout.ms=3000: the produce requests to the paused broker
	// have timed out by now, and Prometheus has seen it.
	waitQuery(t, api, `sum(outboxrelay_kafka_produce_errors_total) > 0`, 30*time.Second)
	resume()
	resumed := time.Now()
	waitRule(t, api, "outboxrelay-scaled", "inactive", 60*time.Second)
	resolved := time.Since(resumed)
	waitQuery(t, api, `sum(increase(outboxrelay_events_published_total[10s])) > 0`, 60*time.Second)
	t.Logf("%s (> %s s for %s): pending %s and firing %s after pausing Kafka, inactive %s after resuming",
		lagAlert, scaledLag, scaledFor, pending.Round(100*time.Millisecond), firing.Round(100*time.Millisecond),
		resolved.Round(100*time.Millisecond))
	stopLoad()

	checkQueries(t, api)
}

// waitQuery waits until the instant query returns a series.
func waitQuery(t *testing.T, api, expr string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var res struct {
			Result []json.RawMessage `json:"result"`
		}
		err := apiGet(api, "/api/v1/query", url.Values{"query": {expr}}, &res)
		if err == nil && len(res.Result) > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: nothing after %s (%v)", expr, timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// prometheusBinary finds Debian's prometheus (scripts/alerts-test installs
// it). Missing: skipped, or failed under OUTBOXRELAY_REQUIRE_SERVICES=1.
func prometheusBinary(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("prometheus")
	if err == nil {
		return p
	}
	if testbed.Required() {
		t.Fatalf("prometheus is required (%s=1) but not on PATH: apt-get install prometheus (scripts/alerts-test does)", testbed.EnvRequire)
	}
	t.Skip("skipping: needs prometheus on PATH (apt-get install prometheus, or make test)")
	return ""
}

// scaledLagRules is the lag alert of alerts.yml in a group of its own, its
// threshold and for: scaled to test time; everything else as written.
func scaledLagRules(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(raw), "      - alert: "+lagAlert+"\n")
	if !ok {
		t.Fatalf("%s has no alert %s", alertsFile, lagAlert)
	}
	block, _, _ = strings.Cut(block, "\n      - alert: ")
	for _, r := range [][2]string{{"_seconds{job=\"outboxrelay\"} > 60\n", "_seconds{job=\"outboxrelay\"} > " + scaledLag + "\n"}, {"for: 5m\n", "for: " + scaledFor + "\n"}} {
		if strings.Count(block, r[0]) != 1 {
			t.Fatalf("%s: alert %s no longer holds %q once; update the test's scaling", alertsFile, lagAlert, r[0])
		}
		block = strings.Replace(block, r[0], r[1], 1)
	}
	return "groups:\n  - name: outboxrelay-scaled\n    rules:\n      - alert: " + lagAlert + "\n" + block + "\n"
}

// startPrometheus runs Prometheus scraping the relay every second as job
// outboxrelay, with alerts.yml and the scaled lag rule, and returns its
// API's base URL once it is ready.
func startPrometheus(t *testing.T, prom string, relayPort int) string {
	t.Helper()
	dir := t.TempDir()
	abs, err := filepath.Abs(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	scaled := filepath.Join(dir, "scaled.yml")
	if err := os.WriteFile(scaled, []byte(scaledLagRules(t)), 0o644); err != nil {
		t.Fatal(err)
	}
	// A 2 s scrape timeout: /metrics answers in milliseconds, but the
	// machine the tests share may stall a process for a second.
	config := fmt.Sprintf(`global: {scrape_interval: 2s, scrape_timeout: 2s, evaluation_interval: 1s}
rule_files: [%q, %q]
scrape_configs:
  - job_name: outboxrelay
    static_configs: [{targets: ["127.0.0.1:%d"]}]
`, abs, scaled, relayPort)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	startProcess(t, "prometheus", prom, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address=127.0.0.1:"+strconv.Itoa(port))
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(60 * time.Second)
	for {
		res, err := http.Get(base + "/-/ready")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return base
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus at %s not ready after 60 s: %v", base, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// insertLoad inserts one example event every 50 ms until the returned
// function is called (Cleanup calls it too).
func insertLoad(t *testing.T, dsn string) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer conn.Close(context.Background())
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			_, _ = conn.Exec(ctx, `INSERT INTO public.outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('orders', $1, 'paid', '{"load": true}')`, strconv.Itoa(i%10))
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}

// apiGet calls the Prometheus HTTP API and decodes its data field.
func apiGet(api, path string, query url.Values, data any) error {
	res, err := http.Get(api + path + "?" + query.Encode())
	if err != nil {
		return err
	}
	defer res.Body.Close()
	var body struct {
		Status    string          `json:"status"`
		Error     string          `json:"error"`
		ErrorType string          `json:"errorType"`
		Data      json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		return fmt.Errorf("%s: %s: %w", path, res.Status, err)
	}
	if body.Status != "success" {
		return fmt.Errorf("%s %s: %s: %s", path, query.Encode(), body.ErrorType, body.Error)
	}
	return json.Unmarshal(body.Data, data)
}

// rule is one alerting rule as /api/v1/rules reports it.
type rule struct {
	Name   string `json:"name"`
	Query  string `json:"query"`
	State  string `json:"state"`
	Health string `json:"health"`
	Error  string `json:"lastError"`
}

func rules(t *testing.T, api string) map[string][]rule {
	t.Helper()
	var data struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []rule `json:"rules"`
		} `json:"groups"`
	}
	if err := apiGet(api, "/api/v1/rules", url.Values{"type": {"alert"}}, &data); err != nil {
		t.Fatal(err)
	}
	out := map[string][]rule{}
	for _, g := range data.Groups {
		out[g.Name] = g.Rules
	}
	return out
}

// waitRule waits until the group's lag alert is in state (inactive,
// pending or firing), polling faster than the evaluation interval.
func waitRule(t *testing.T, api, group, state string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := "not loaded"
	for time.Now().Before(deadline) {
		for _, r := range rules(t, api)[group] {
			if r.Name == lagAlert && r.Health == "ok" {
				last = r.State
			} else if r.Name == lagAlert {
				last = r.Health + ": " + r.Error
			}
		}
		if last == state {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s in group %s is %s after %s, want %s", lagAlert, group, last, timeout, state)
}

// What seriesNames removes before it reads identifiers: string literals,
// label matchers and range or subquery brackets, label lists of
// aggregations and vector matching.
var (
	promQuoted    = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	promBracketed = regexp.MustCompile(`\{[^}]*\}|\[[^\]]*\]`)
	promLabelList = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promWord      = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	promKeywords  = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true, "inf": true, "nan": true}
)

// seriesNames returns the metric names a PromQL expression selects: every
// identifier that is not a function call, a keyword, a label or a
// duration.
func seriesNames(expr string) []string {
	e := promQuoted.ReplaceAllString(expr, `""`)
	e = promBracketed.ReplaceAllString(e, " ")
	e = promLabelList.ReplaceAllString(e, " ")
	var names []string
	for _, loc := range promWord.FindAllStringIndex(e, -1) {
		word, before, after := e[loc[0]:loc[1]], byte(' '), strings.TrimLeft(e[loc[1]:], " \t\n")
		if loc[0] > 0 {
			before = e[loc[0]-1]
		}
		// A unit of a number (15m, 1e3), a function call, a keyword.
		if before >= '0' && before <= '9' || before == '.' || strings.HasPrefix(after, "(") || promKeywords[strings.ToLower(word)] {
			continue
		}
		names = append(names, word)
	}
	return names
}

// checkQueries runs every alert expression (as Prometheus loaded them)
// and every dashboard query, with the dashboard's variables set to what
// Grafana would send.
func checkQueries(t *testing.T, api string) {
	t.Helper()
	var names []string
	if err := apiGet(api, "/api/v1/label/__name__/values", url.Values{}, &names); err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{}
	for _, n := range names {
		exported[n] = true
	}
	alertRules := rules(t, api)["outboxrelay"]
	if len(alertRules) == 0 {
		t.Fatal("Prometheus loaded no rule of group outboxrelay from alerts.yml")
	}
	for _, r := range alertRules {
		if r.Health != "ok" {
			t.Errorf("alert %s: health %s: %s", r.Name, r.Health, r.Error)
		}
		checkQuery(t, api, exported, "alert "+r.Name, r.Query, false)
	}
	panels := dashboardQueries(t)
	for _, q := range panels {
		checkQuery(t, api, exported, q.where, q.expr, true)
	}
	t.Logf("%d alert and %d dashboard expressions ran without error; every series name in them is exported", len(alertRules), len(panels))
}

func checkQuery(t *testing.T, api string, exported map[string]bool, where, expr string, wantData bool) {
	t.Helper()
	names := seriesNames(expr)
	if len(names) == 0 {
		t.Errorf("%s: no series name found in %s", where, expr)
	}
	for _, n := range names {
		if !exported[n] {
			t.Errorf("%s: series %s is not one the relay exports (nor Prometheus' up): %s", where, n, expr)
		}
	}
	var res struct {
		Result []json.RawMessage `json:"result"`
	}
	if err := apiGet(api, "/api/v1/query", url.Values{"query": {expr}}, &res); err != nil {
		t.Errorf("%s: %v", where, err)
		return
	}
	if wantData && len(res.Result) == 0 {
		t.Errorf("%s: no data from %s", where, expr)
	}
}
