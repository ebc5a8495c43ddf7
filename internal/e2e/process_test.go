package e2e_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
)

// relayProc is one run of the outboxrelay binary.
type relayProc struct {
	cmd     *exec.Cmd
	logPath string
	done    chan struct{} // closed when the process was reaped
	waitErr error         // set before done is closed
}

// startRelay runs `outboxrelay run --config cfg` with its log in a file of
// the test's temporary directory. Cleanup kills it if it still runs and
// prints its log when the test failed.
func startRelay(t *testing.T, cfg string) *relayProc {
	t.Helper()
	if relayBinary == "" {
		t.Fatal("the relay binary was not built (TestMain builds it only when the bed's variables are set)")
	}
	return startProcess(t, "relay", nil, relayBinary, "run", "--config", cfg, "--kafka-brokers", testbed.KafkaBrokers(t), "--log-format", "text")
}

// startProcess runs bin with args, and env added to the test's
// environment, its output in a log file of the test's temporary
// directory. Cleanup kills it if it still runs and prints its log, under
// name, when the test failed.
func startProcess(t *testing.T, name string, env []string, bin string, args ...string) *relayProc {
	t.Helper()
	logFile, err := os.CreateTemp(t.TempDir(), name+"-*.log")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		t.Fatalf("starting the %s: %v", name, err)
	}
	r := &relayProc{cmd: cmd, logPath: logFile.Name(), done: make(chan struct{})}
	go func() {
		r.waitErr = cmd.Wait()
		logFile.Close()
		close(r.done)
	}()
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			_ = cmd.Process.Kill()
			<-r.done
		}
		if t.Failed() {
			t.Logf("%s (pid %d) log %s, last lines:\n%s", name, cmd.Process.Pid, r.logPath, r.logTail(100))
		}
	})
	return r
}

// signal sends sig to the relay.
func (r *relayProc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := r.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("sending %v to the relay: %v", sig, err)
	}
}

// wait waits up to timeout for the relay to exit and returns its exit code
// (-1 when a signal ended it); it fails the test on timeout.
func (r *relayProc) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-r.done:
		return r.cmd.ProcessState.ExitCode()
	case <-time.After(timeout):
		t.Fatalf("relay still running %s after it was told to stop; log:\n%s", timeout, r.logTail(40))
		return 0
	}
}

// stop sends SIGTERM and expects exit code 0 within timeout; it returns
// how long the exit took.
func (r *relayProc) stop(t *testing.T, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	r.signal(t, syscall.SIGTERM)
	code := r.wait(t, timeout)
	took := time.Since(start)
	if code != 0 {
		t.Fatalf("relay exited with code %d after SIGTERM (%v); want 0; log:\n%s", code, r.waitErr, r.logTail(40))
	}
	return took
}

// peakRSSMiB is the running relay's peak resident set since exec (VmHWM).
// Not getrusage's ru_maxrss: Linux counts in it the test process's RSS,
// which the child shared between fork and exec (seen: 371 MiB for a relay
// whose own peak was 30 MiB). Call it before stopping the relay.
func (r *relayProc) peakRSSMiB(t *testing.T) float64 {
	t.Helper()
	if r.exited() {
		t.Fatal("peakRSSMiB: the relay has exited; read it before stopping the relay")
	}
	hwm, ok := procStatusKiB(r.cmd.Process.Pid, "VmHWM")
	if !ok {
		t.Fatalf("reading VmHWM of the relay (pid %d)", r.cmd.Process.Pid)
	}
	return float64(hwm) / 1024
}

// httpAddr waits for the relay, started with --http-addr 127.0.0.1:0, to
// log the address the kernel gave its HTTP server. A port picked by the
// test and released before the relay binds it can meanwhile be taken by
// any outgoing connection.
func (r *relayProc) httpAddr(t *testing.T, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if addr := r.logValue("http: serving", "addr"); addr != "" {
			return addr
		}
		if r.exited() {
			t.Fatalf("the relay exited (%v) before serving HTTP; log:\n%s", r.waitErr, r.logTail(40))
		}
		if time.Now().After(deadline) {
			t.Fatalf("the relay did not log its HTTP address within %s; log:\n%s", timeout, r.logTail(40))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// log returns the relay's log so far.
func (r *relayProc) log() string {
	b, err := os.ReadFile(r.logPath)
	if err != nil {
		return fmt.Sprintf("(reading %s: %v)", r.logPath, err)
	}
	return string(b)
}

func (r *relayProc) logTail(n int) string {
	lines := strings.Split(strings.TrimRight(r.log(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// logValue returns the value of key=value in the first log line that
// contains msg (text handler format), or "".
func (r *relayProc) logValue(msg, key string) string {
	for _, line := range strings.Split(r.log(), "\n") {
		if !strings.Contains(line, msg) {
			continue
		}
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, key+"="); ok {
				return v
			}
		}
	}
	return ""
}

// javaClasspath is the classpath of the bed's Kafka jars (scripts/devenv).
func javaClasspath(t *testing.T) string {
	t.Helper()
	cache := os.Getenv("OUTBOXRELAY_CACHE")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Fatal(err)
		}
		cache = filepath.Join(home, ".cache", "outboxrelay")
	}
	libs := filepath.Join(cache, "kafka-4.1.1", "libs")
	if _, err := os.Stat(filepath.Join(libs, ".complete")); err != nil {
		t.Fatalf("the bed's Kafka jars are not in %s (scripts/devenv up fetches them): %v", libs, err)
	}
	return filepath.Join(libs, "*")
}

// javaProduce runs Kafka's console producer (the real Java client) with
// lines "key|value" on stdin.
func javaProduce(t *testing.T, topic string, lines []string) {
	t.Helper()
	cmd := exec.Command("java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-cp", javaClasspath(t), "org.apache.kafka.tools.ConsoleProducer",
		"--bootstrap-server", testbed.KafkaBrokers(t), "--topic", topic,
		"--property", "parse.key=true", "--property", "key.separator=|",
		"--producer-property", "acks=all")
	cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting Kafka's console producer: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Kafka's console producer: %v\n%s", err, out.String())
		}
	case <-time.After(90 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("Kafka's console producer did not finish in 90 s\n%s", out.String())
	}
}
