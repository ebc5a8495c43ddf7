package e2e_test

import (
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
)

// TestCheckWALLevelReplica: `outboxrelay check` against a server with
// wal_level=replica (a private throwaway cluster: the shared one cannot be
// changed) prints the ✗ line with the exact fix and exits 1.
func TestCheckWALLevelReplica(t *testing.T) {
	t.Parallel()
	brokers := testbed.KafkaBrokers(t)
	port := testbed.StartPrivateCluster(t, "wal_level = replica").Port
	f := &fixture{name: fmt.Sprintf("e2e_checkwal_%d_%d", time.Now().UnixNano()%1e12, nameSeq.Add(1))}
	cfg := f.config(t, map[string]string{
		"database.hostname": "127.0.0.1",
		"database.port":     strconv.Itoa(port),
		"database.user":     "postgres",
		"database.dbname":   "postgres",
	})
	if relayBinary == "" {
		t.Fatal("the relay binary was not built")
	}
	out, err := exec.Command(relayBinary, "check", "--config", cfg, "--kafka-brokers", brokers, "--timeout", "30s").CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("check exited with %v; want exit code 1\n%s", err, out)
	}
	text := string(out)
	if !strings.Contains(text, "✗ wal_level: replica") || !strings.Contains(text, "fix: ALTER SYSTEM SET wal_level = logical;") {
		t.Fatalf("check output lacks the wal_level ✗ line and its fix:\n%s", text)
	}
}
