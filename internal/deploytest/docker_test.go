package deploytest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Environment variables set by scripts/image-test.
const (
	envImage      = "OUTBOXRELAY_TEST_IMAGE"
	envDocker     = "DOCKER"
	envTLSBrokers = "OUTBOXRELAY_TEST_KAFKA_TLS_BROKERS"
)

// dockerCLI returns the docker client to use: $DOCKER, else docker on PATH.
func dockerCLI() string {
	if d := os.Getenv(envDocker); d != "" {
		return d
	}
	return "docker"
}

// docker runs the docker client and returns its stdout; the error carries
// stderr. A command that outlives timeout is killed.
func docker(timeout time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, dockerCLI(), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("docker %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// mustDocker is docker that fails the test on error.
func mustDocker(t *testing.T, timeout time.Duration, args ...string) string {
	t.Helper()
	out, err := docker(timeout, args...)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(out)
}

// freePort returns a TCP port on 127.0.0.1 that nothing listened on a
// moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
