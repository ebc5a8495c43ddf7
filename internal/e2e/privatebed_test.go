package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/segmentio/kafka-go"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
	"github.com/outboxrelay/outboxrelay/internal/verify"
)

// privateBed is a second PostgreSQL and Kafka that only the fault tests
// use: they kill its broker and restart its server, which the shared bed's
// other tests must never see. It is `scripts/devenv up` with its own
// OUTBOXRELAY_DEVENV_DIR, so it runs on other free ports.
type privateBed struct {
	dir     string // its OUTBOXRELAY_DEVENV_DIR
	script  string // scripts/devenv
	pgURL   string // superuser DSN
	brokers string
	// kafkaDown: killKafka ran and upKafka did not yet; the tests run one
	// after the other, so only the running test touches it.
	kafkaDown bool
}

// startPrivateBed brings a private bed up and registers `down` (and the
// removal of its directory, kept when the test failed, for its logs). It
// follows the shared bed's rule: skipped when the shared bed's variables
// are unset, failed instead under OUTBOXRELAY_REQUIRE_SERVICES=1.
func startPrivateBed(t *testing.T) *privateBed {
	t.Helper()
	testbed.Postgres(t)
	testbed.KafkaBrokers(t)
	script, err := filepath.Abs(filepath.Join("..", "..", "scripts", "devenv"))
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "outboxrelay-faultbed-")
	if err != nil {
		t.Fatal(err)
	}
	b := &privateBed{dir: dir, script: script}
	t.Cleanup(func() {
		if _, err := b.devenv("down"); err != nil {
			t.Errorf("stopping the private bed in %s: %v", dir, err)
		}
		if t.Failed() {
			t.Logf("private bed kept in %s (postgres log pg/postgres.log, kafka log kafka/kafka.log)", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	started := time.Now()
	out, err := b.devenv("up")
	if err != nil {
		t.Fatalf("starting the private bed in %s: %v", dir, err)
	}
	env := parseExports(out)
	b.pgURL, b.brokers = env[testbed.EnvPostgresURL], env[testbed.EnvKafkaBrokers]
	if b.pgURL == "" || b.brokers == "" {
		t.Fatalf("`scripts/devenv up` in %s printed no %s or %s:\n%s", dir, testbed.EnvPostgresURL, testbed.EnvKafkaBrokers, out)
	}
	t.Logf("private bed up in %s: PostgreSQL %s, Kafka %s (%s)", time.Since(started).Round(time.Second), b.pgURL, b.brokers, dir)
	return b
}

// devenv runs scripts/devenv on the private bed and returns its stdout;
// the error carries its stderr.
func (b *privateBed) devenv(args ...string) (string, error) {
	cmd := exec.Command(b.script, args...)
	cmd.Env = append(os.Environ(), "OUTBOXRELAY_DEVENV_DIR="+b.dir)
	// The shared bed's PostgreSQL major, not devenv's default.
	if v := os.Getenv(testbed.EnvPostgresVersion); v != "" {
		cmd.Env = append(cmd.Env, "OUTBOXRELAY_PG_VERSION="+v)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// A server it starts must not keep our pipes open forever.
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("scripts/devenv %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// parseExports reads `export NAME='value'` lines.
func parseExports(out string) map[string]string {
	env := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		kv, ok := strings.CutPrefix(strings.TrimSpace(line), "export ")
		if !ok {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if ok {
			env[k] = strings.Trim(v, "'")
		}
	}
	return env
}

// killKafka kills the private broker with SIGKILL and waits until it is
// gone; it returns the pid it killed. Should the test end before upKafka,
// cleanup starts the broker again for the next test.
func (b *privateBed) killKafka(t *testing.T) int {
	t.Helper()
	b.kafkaDown = true
	t.Cleanup(func() {
		if !b.kafkaDown {
			return
		}
		if _, err := b.devenv("up"); err != nil {
			t.Errorf("clean-up: restarting the private broker: %v", err)
			return
		}
		b.kafkaDown = false
	})
	raw, err := os.ReadFile(filepath.Join(b.dir, "kafka", "pid"))
	if err != nil {
		t.Fatalf("reading the private broker's pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatalf("the private broker's pid file holds %q: %v", raw, err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("killing the private broker (pid %d): %v", pid, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for processRuns(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("the private broker (pid %d) still runs 10 s after SIGKILL", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return pid
}

// processRuns reports whether pid runs and is not a zombie.
func processRuns(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// upKafka restarts the private broker with `scripts/devenv up`, on its old
// ports, and returns how long that took.
func (b *privateBed) upKafka(t *testing.T) time.Duration {
	t.Helper()
	started := time.Now()
	out, err := b.devenv("up")
	if err != nil {
		t.Fatalf("restarting the private broker: %v", err)
	}
	b.kafkaDown = false
	if got := parseExports(out)[testbed.EnvKafkaBrokers]; got != b.brokers {
		t.Fatalf("the private broker came back on %s, not on its old address %s", got, b.brokers)
	}
	return time.Since(started)
}

// restartPostgres restarts the private server with `pg_ctl -m fast
// restart` (every connection is terminated, the server shuts down cleanly
// and starts again) and returns how long pg_ctl took.
func (b *privateBed) restartPostgres(t *testing.T) time.Duration {
	t.Helper()
	data := filepath.Join(b.dir, "pg", "data")
	pidFile, err := os.ReadFile(filepath.Join(data, "postmaster.pid"))
	if err != nil {
		t.Fatalf("reading the private server's postmaster.pid: %v", err)
	}
	postmaster, _, _ := strings.Cut(string(pidFile), "\n")
	// The running server's own binary: pg_ctl of the same installation.
	exe, err := os.Readlink("/proc/" + strings.TrimSpace(postmaster) + "/exe")
	if err != nil {
		t.Fatalf("finding the private server's binary: %v", err)
	}
	cmd := exec.Command("runuser", "-u", "postgres", "--", filepath.Join(filepath.Dir(exe), "pg_ctl"),
		"-D", data, "-l", filepath.Join(b.dir, "pg", "postgres.log"), "-m", "fast", "-w", "-t", "60", "restart")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 10 * time.Second
	started := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("pg_ctl restart: %v\n%s", err, out.String())
	}
	return time.Since(started)
}

// connect opens a superuser connection to the private server, closed at
// the end of the test.
func (b *privateBed) connect(t *testing.T) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, b.pgURL)
	if err != nil {
		t.Fatalf("connecting to the private PostgreSQL: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// faultTopics are the aggregate types the fault load and burst route to.
var faultTopics = []string{"order", "customer", "bulk"}

// newFixture makes a fixture on the private server: schema, outbox with an
// ord column (increasing with commit order within each aggregate, see
// ordPerTx), publication; the slot is the relay's. The slot is dropped at the
// end, so that the next test's walsender does not share the server with it.
func (b *privateBed) newFixture(t *testing.T, short string) *fixture {
	t.Helper()
	f := &fixture{admin: b.connect(t), name: fmt.Sprintf("fault_%s_%d", short, time.Now().UnixNano()%1e9)}
	testbed.Exec(t, f.admin,
		`CREATE SCHEMA `+f.name,
		`CREATE TABLE `+f.name+`.outbox (id bigserial PRIMARY KEY, aggregatetype text NOT NULL, aggregateid text NOT NULL, type text NOT NULL DEFAULT 'e', ord bigint NOT NULL, payload jsonb)`,
		`CREATE PUBLICATION `+f.name+` FOR TABLE `+f.name+`.outbox`,
		`GRANT USAGE ON SCHEMA `+f.name+` TO debezium`,
		`GRANT SELECT ON ALL TABLES IN SCHEMA `+f.name+` TO debezium`,
	)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, b.pgURL) // f.admin may be one a restart broke
		if err != nil {
			t.Logf("clean-up: connecting to the private PostgreSQL: %v", err)
			return
		}
		defer conn.Close(context.Background())
		for ctx.Err() == nil {
			tag, err := conn.Exec(ctx, `SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1 AND NOT active`, f.name)
			if err == nil && tag.RowsAffected() > 0 {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("clean-up: slot %s not dropped", f.name)
	})
	return f
}

// config is the fixture's connector config pointed at the private server,
// with topics of 3 partitions, so that aggregates share partitions.
func (b *privateBed) config(t *testing.T, f *fixture, extra ...map[string]string) string {
	t.Helper()
	host, port, err := hostPort(b.pgURL)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{
		"database.hostname":                 host,
		"database.port":                     port,
		"topic.creation.default.partitions": "3",
	}
	for _, e := range extra {
		maps.Copy(m, e)
	}
	return f.config(t, m)
}

func hostPort(dsn string) (string, string, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return "", "", fmt.Errorf("parsing the private bed's DSN: %w", err)
	}
	return cfg.Host, strconv.Itoa(int(cfg.Port)), nil
}

// logFile is a file in the test's temporary directory that every relay of
// the test appends its log to.
func logFile(t *testing.T, name string) *os.File {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// startRelay runs the relay against the private bed, its log appended to
// log. Cleanup kills it if it still runs, and shows the log's end when the
// test failed.
func (b *privateBed) startRelay(t *testing.T, cfg string, log *os.File, extraArgs ...string) *relayProc {
	t.Helper()
	if relayBinary == "" {
		t.Fatal("the relay binary was not built (TestMain builds it only when the bed's variables are set)")
	}
	args := append([]string{"run", "--config", cfg, "--kafka-brokers", b.brokers, "--log-format", "text"}, extraArgs...)
	cmd := exec.Command(relayBinary, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the relay: %v", err)
	}
	r := &relayProc{cmd: cmd, logPath: log.Name(), done: make(chan struct{})}
	go func() {
		r.waitErr = cmd.Wait()
		close(r.done)
	}()
	t.Cleanup(func() {
		select {
		case <-r.done:
			return
		default:
		}
		_ = cmd.Process.Kill()
		<-r.done
		if t.Failed() {
			t.Logf("relay (pid %d) log %s, last lines:\n%s", cmd.Process.Pid, r.logPath, r.logTail(60))
		}
	})
	return r
}

// exited reports whether the relay has exited.
func (r *relayProc) exited() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// partitionKey names one partition of one topic.
type partitionKey struct {
	topic     string
	partition int
}

// endOffsets returns the next offset of every partition of the topics that
// exist, in one metadata and one ListOffsets request. A Transport of its
// own: kafka-go's shared one answers metadata from a cache that may not
// know a topic the relay created a moment ago.
func endOffsets(ctx context.Context, brokers string, topics []string) (map[partitionKey]int64, error) {
	transport := &kafka.Transport{}
	defer transport.CloseIdleConnections()
	client := &kafka.Client{Addr: kafka.TCP(brokers), Timeout: 10 * time.Second, Transport: transport}
	meta, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: topics})
	if err != nil {
		return nil, fmt.Errorf("metadata of %v: %w", topics, err)
	}
	req := &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{}}
	for _, tm := range meta.Topics {
		if tm.Error != nil {
			continue // not created yet
		}
		for _, p := range tm.Partitions {
			req.Topics[tm.Name] = append(req.Topics[tm.Name], kafka.LastOffsetOf(p.ID))
		}
	}
	out := map[partitionKey]int64{}
	if len(req.Topics) == 0 {
		return out, nil
	}
	res, err := client.ListOffsets(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("end offsets of %v: %w", topics, err)
	}
	for topic, parts := range res.Topics {
		for _, p := range parts {
			if p.Error != nil {
				return nil, fmt.Errorf("end offset of %s/%d: %w", topic, p.Partition, p.Error)
			}
			out[partitionKey{topic, p.Partition}] = p.LastOffset
		}
	}
	return out, nil
}

// topicNames are the fixture's topics for the aggregate types.
func (f *fixture) topicNames(aggTypes []string) []string {
	names := make([]string, len(aggTypes))
	for i, a := range aggTypes {
		names[i] = f.topic(a)
	}
	return names
}

// verifyOutbox reads the fixture's outbox (commit order: the ord column)
// and every record of its topics on the private broker, and checks them
// with internal/verify. It also returns what it read, for the callers'
// own accounting of duplicates.
func (b *privateBed) verifyOutbox(t *testing.T, f *fixture) (verify.Report, []verify.Event, []verify.Delivery) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	events, err := verify.Outbox(ctx, f.admin, verify.OutboxQuery{
		Table: f.name + ".outbox", IDColumn: "id", KeyColumn: "aggregateid", OrderBy: "ord",
	})
	if err != nil {
		t.Fatal(err)
	}
	deliveries, err := verify.Topics(ctx, &kafka.Dialer{Timeout: 10 * time.Second}, b.brokers, f.topicNames(faultTopics), "id")
	if err != nil {
		t.Fatal(err)
	}
	return verify.Check(events, deliveries), events, deliveries
}

// requireComplete fails the test when the report shows a missing event,
// an unknown delivery or an aggregate out of order.
func requireComplete(t *testing.T, what string, rep verify.Report) {
	t.Helper()
	t.Logf("%s: verify: %s", what, firstLine(rep.String()))
	if !rep.OK() || len(rep.Unknown) != 0 || rep.Events == 0 {
		t.Errorf("%s: want every event delivered, first deliveries in commit order, no unknown records:\n%s", what, rep)
	}
}
