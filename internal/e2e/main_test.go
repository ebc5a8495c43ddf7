package e2e_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
)

// relayBinary is the path of the outboxrelay binary TestMain builds; empty
// when the bed is not configured (every test then skips or fails through
// testbed before it needs the binary).
var relayBinary string

// envBinary names a prebuilt binary to test instead of building
// ./cmd/outboxrelay, e.g. the one a release or the Dockerfile built.
const envBinary = "OUTBOXRELAY_E2E_BINARY"

func TestMain(m *testing.M) {
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	if os.Getenv(testbed.EnvPostgresURL) == "" || os.Getenv(testbed.EnvKafkaBrokers) == "" {
		return m.Run()
	}
	if bin := os.Getenv(envBinary); bin != "" {
		relayBinary = bin
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "outboxrelay-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "outboxrelay")
	build := exec.Command("go", "build", "-o", bin, "github.com/outboxrelay/outboxrelay/cmd/outboxrelay")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: building the relay:", err)
		return 1
	}
	relayBinary = bin
	return m.Run()
}
