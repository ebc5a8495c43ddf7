package testbed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PrivateBed is `scripts/devenv up` in a directory of its own, so on other
// free ports: for tests that pause, kill or restart a service, which the
// shared bed's other tests must never see.
type PrivateBed struct {
	Dir          string // its OUTBOXRELAY_DEVENV_DIR
	PostgresURL  string // superuser DSN
	KafkaBrokers string
	script       string
	// kafkaDown: KillKafka ran and UpKafka did not yet; the tests using a
	// bed run one after the other, so only the running test touches it.
	kafkaDown bool
}

// StartPrivateBed brings a private bed up and registers its `down` (and
// the removal of its directory, kept for its logs when the test failed).
// It follows the shared bed's rule: skipped when the shared bed's variables
// are unset, failed instead under OUTBOXRELAY_REQUIRE_SERVICES=1.
func StartPrivateBed(t testing.TB) *PrivateBed {
	t.Helper()
	Postgres(t)
	KafkaBrokers(t)
	script, err := devenvScript()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "outboxrelay-privatebed-")
	if err != nil {
		t.Fatal(err)
	}
	b := &PrivateBed{Dir: dir, script: script}
	t.Cleanup(func() {
		if _, err := b.Devenv("down"); err != nil {
			t.Errorf("stopping the private bed in %s: %v", dir, err)
		}
		if t.Failed() {
			t.Logf("private bed kept in %s (pg/postgres.log, kafka/kafka.log)", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	started := time.Now()
	out, err := b.Devenv("up")
	if err != nil {
		t.Fatalf("starting the private bed in %s: %v", dir, err)
	}
	env := ParseExports(out)
	b.PostgresURL, b.KafkaBrokers = env[EnvPostgresURL], env[EnvKafkaBrokers]
	if b.PostgresURL == "" || b.KafkaBrokers == "" {
		t.Fatalf("`scripts/devenv up` in %s printed no %s or %s:\n%s", dir, EnvPostgresURL, EnvKafkaBrokers, out)
	}
	b.checkOwnBroker(t)
	t.Logf("private bed up in %s: PostgreSQL %s, Kafka %s (%s)", time.Since(started).Round(time.Second), b.PostgresURL, b.KafkaBrokers, dir)
	return b
}

// ParseExports reads the `export NAME='value'` lines scripts/devenv and
// scripts/debezium print.
func ParseExports(out string) map[string]string {
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

// checkOwnBroker fails the test unless the private broker's process
// listens on the address the bed printed. Beds started at the same moment
// can pick the same free port: the loser's broker exits, but the winner's
// answers the loser's readiness check, and a test pausing "its" broker
// would pause nothing.
func (b *PrivateBed) checkOwnBroker(t testing.TB) {
	t.Helper()
	pid := b.brokerPID(t)
	_, portStr, _ := strings.Cut(b.KafkaBrokers, ":")
	port, err := strconv.Atoi(portStr)
	if err != nil {
		t.Fatalf("private broker address %q: %v", b.KafkaBrokers, err)
	}
	inodes := map[string]bool{}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatalf("the private broker (pid %d) is not running: %v", pid, err)
	}
	for _, fd := range fds {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if inode, ok := strings.CutPrefix(link, "socket:["); err == nil && ok {
			inodes[strings.TrimSuffix(inode, "]")] = true
		}
	}
	// Java listens on IPv6 sockets, 127.0.0.1 as ::ffff:127.0.0.1.
	var tcp []byte
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		tcp = append(tcp, b...)
	}
	want := fmt.Sprintf(":%04X", port)
	for _, line := range strings.Split(string(tcp), "\n") {
		// sl local_address rem_address st ... inode; st 0A is LISTEN.
		f := strings.Fields(line)
		if len(f) > 9 && strings.HasSuffix(f[1], want) && f[3] == "0A" && inodes[f[9]] {
			return
		}
	}
	t.Fatalf("the private broker (pid %d) does not listen on %s: another bed's broker took the port (beds started at once); see %s/kafka/kafka.log", pid, b.KafkaBrokers, b.Dir)
}

func (b *PrivateBed) brokerPID(t testing.TB) int {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(b.Dir, "kafka", "pid"))
	if err != nil {
		t.Fatalf("reading the private broker's pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatalf("the private broker's pid file holds %q: %v", raw, err)
	}
	return pid
}

// devenvScript finds scripts/devenv in the working directory or above it
// (tests run in their package's directory).
func devenvScript() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, "scripts", "devenv")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("scripts/devenv not found in the working directory or above it")
		}
		dir = parent
	}
}

// Devenv runs scripts/devenv on the private bed and returns its stdout;
// the error carries its stderr.
func (b *PrivateBed) Devenv(args ...string) (string, error) {
	cmd := exec.Command(b.script, args...)
	cmd.Env = append(os.Environ(), "OUTBOXRELAY_DEVENV_DIR="+b.Dir)
	// The shared bed's PostgreSQL major, not devenv's default.
	if v := os.Getenv(EnvPostgresVersion); v != "" {
		cmd.Env = append(cmd.Env, "OUTBOXRELAY_PG_VERSION="+v)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 10 * time.Second // a server it starts must not hold our pipes
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("scripts/devenv %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// Connect opens a superuser connection to the private PostgreSQL, closed
// at the end of the test.
func (b *PrivateBed) Connect(t testing.TB) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, b.PostgresURL)
	if err != nil {
		t.Fatalf("connecting to the private PostgreSQL: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// PostgresHostPort returns the private PostgreSQL's host and port.
func (b *PrivateBed) PostgresHostPort(t testing.TB) (string, int) {
	t.Helper()
	cfg, err := pgx.ParseConfig(b.PostgresURL)
	if err != nil {
		t.Fatalf("parsing the private bed's DSN: %v", err)
	}
	return cfg.Host, int(cfg.Port)
}

// PauseKafka stops the private broker with SIGSTOP (it keeps its
// connections open and answers nothing) and returns the function that
// resumes it with SIGCONT, which Cleanup also calls.
func (b *PrivateBed) PauseKafka(t testing.TB) (resume func()) {
	t.Helper()
	pid := b.brokerPID(t)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("pausing the private broker (pid %d): %v", pid, err)
	}
	waitStopped(t, pid)
	resumed := false
	resume = func() {
		if !resumed {
			resumed = true
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}
	t.Cleanup(resume)
	return resume
}

// waitStopped waits until the process is in the stopped state (T), which
// SIGSTOP reaches once every thread has stopped.
func waitStopped(t testing.TB, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	state := "?"
	for time.Now().Before(deadline) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			t.Fatalf("the private broker (pid %d) is gone: %v", pid, err)
		}
		// The state follows the command name in parentheses.
		if s := string(stat); strings.LastIndexByte(s, ')')+2 < len(s) {
			state = s[strings.LastIndexByte(s, ')')+2:][:1]
		}
		if state == "T" {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the private broker (pid %d) is in state %s 10 s after SIGSTOP, want T (stopped)", pid, state)
}

// KillKafka kills the private broker with SIGKILL and waits until it is
// gone; it returns the pid it killed. Should the test end before UpKafka,
// Cleanup starts the broker again for the next test.
func (b *PrivateBed) KillKafka(t testing.TB) int {
	t.Helper()
	b.kafkaDown = true
	t.Cleanup(func() {
		if !b.kafkaDown {
			return
		}
		if _, err := b.Devenv("up"); err != nil {
			t.Errorf("clean-up: restarting the private broker: %v", err)
			return
		}
		b.kafkaDown = false
	})
	pid := b.brokerPID(t)
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

// UpKafka restarts the private broker with `scripts/devenv up`, on its old
// port, and returns how long that took.
func (b *PrivateBed) UpKafka(t testing.TB) time.Duration {
	t.Helper()
	started := time.Now()
	out, err := b.Devenv("up")
	if err != nil {
		t.Fatalf("restarting the private broker: %v", err)
	}
	b.kafkaDown = false
	if got := ParseExports(out)[EnvKafkaBrokers]; got != b.KafkaBrokers {
		t.Fatalf("the private broker came back on %s, not on its old address %s", got, b.KafkaBrokers)
	}
	return time.Since(started)
}

// RestartPostgres restarts the private server with `pg_ctl -m fast
// restart` (every connection is terminated, the server shuts down cleanly
// and starts again) and returns how long pg_ctl took.
func (b *PrivateBed) RestartPostgres(t testing.TB) time.Duration {
	t.Helper()
	data := filepath.Join(b.Dir, "pg", "data")
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
		"-D", data, "-l", filepath.Join(b.Dir, "pg", "postgres.log"), "-m", "fast", "-w", "-t", "60", "restart")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 10 * time.Second
	started := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("pg_ctl restart: %v\n%s", err, out.String())
	}
	return time.Since(started)
}
