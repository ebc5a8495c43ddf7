package deploytest

import (
	"bytes"
	"context"
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

	"github.com/outboxrelay/outboxrelay/internal/testbed"
)

// privateBed is `scripts/devenv up` in a directory of its own: the live
// Prometheus test pauses its broker, which the shared bed's other tests
// must never see.
type privateBed struct {
	dir, script    string
	pgURL, brokers string
}

// startPrivateBed brings the bed up and registers its `down`. It follows
// the shared bed's rule: skipped when the shared bed's variables are unset,
// failed instead under OUTBOXRELAY_REQUIRE_SERVICES=1.
func startPrivateBed(t *testing.T) *privateBed {
	t.Helper()
	testbed.Postgres(t)
	testbed.KafkaBrokers(t)
	script, err := filepath.Abs(filepath.Join("..", "..", "scripts", "devenv"))
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "outboxrelay-deploybed-")
	if err != nil {
		t.Fatal(err)
	}
	b := &privateBed{dir: dir, script: script}
	t.Cleanup(func() {
		if _, err := b.devenv("down"); err != nil {
			t.Errorf("stopping the private bed in %s: %v", dir, err)
		}
		if t.Failed() {
			t.Logf("private bed kept in %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	out, err := b.devenv("up")
	if err != nil {
		t.Fatalf("starting the private bed in %s: %v", dir, err)
	}
	for _, line := range strings.Split(out, "\n") {
		kv, _ := strings.CutPrefix(strings.TrimSpace(line), "export ")
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case testbed.EnvPostgresURL:
			b.pgURL = strings.Trim(v, "'")
		case testbed.EnvKafkaBrokers:
			b.brokers = strings.Trim(v, "'")
		}
	}
	if b.pgURL == "" || b.brokers == "" {
		t.Fatalf("`scripts/devenv up` in %s printed no addresses:\n%s", dir, out)
	}
	return b
}

func (b *privateBed) devenv(args ...string) (string, error) {
	cmd := exec.Command(b.script, args...)
	cmd.Env = append(os.Environ(), "OUTBOXRELAY_DEVENV_DIR="+b.dir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 10 * time.Second // a server it starts must not hold our pipes
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("scripts/devenv %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// connect opens a superuser connection to the private PostgreSQL.
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

// hostPort is the private PostgreSQL's address.
func (b *privateBed) hostPort(t *testing.T) (string, int) {
	t.Helper()
	cfg, err := pgx.ParseConfig(b.pgURL)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Host, int(cfg.Port)
}

// pauseBroker stops the private broker with SIGSTOP and returns the
// function that resumes it (SIGCONT), which Cleanup also calls.
func (b *privateBed) pauseBroker(t *testing.T) (resume func()) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(b.dir, "kafka", "pid"))
	if err != nil {
		t.Fatalf("reading the private broker's pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatalf("the private broker's pid file holds %q: %v", raw, err)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("pausing the broker: %v", err)
	}
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

// buildRelay builds the relay binary into a temporary directory.
func buildRelay(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "outboxrelay")
	cmd := exec.Command("go", "build", "-o", bin, "../../cmd/outboxrelay")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the relay: %v\n%s", err, out)
	}
	return bin
}

// startProcess starts a server whose output goes to a log file in the
// test's directory; Cleanup stops it (SIGTERM, then SIGKILL) and shows the
// log's end when the test failed.
func startProcess(t *testing.T, name string, args ...string) {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			if len(b) > 4000 {
				b = b[len(b)-4000:]
			}
			t.Logf("%s log (%s), end:\n%s", name, logPath, b)
		}
	})
}
