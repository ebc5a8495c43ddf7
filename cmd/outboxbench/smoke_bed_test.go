package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
)

// TestBenchSmoke is the reduced form of scripts/compare that make test
// runs (issue 6): a 20,000-event backlog at 1 row/tx drained by
// pg_recvlogical and outboxrelay, then by Debezium (Kafka Connect started
// by scripts/debezium run-connector, as scripts/compare does), each from
// its own fresh slot and topic namespace, all reading testdata/connector.json
// with only name, address, slot, publication, table and topic namespace
// changed. It checks counts, never times: every event received once, in
// per-aggregate order, and every tool finished.
func TestBenchSmoke(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the relay's usage is read from /proc")
	}
	pgURL, brokers := testbed.Postgres(t), testbed.KafkaBrokers(t)
	admin := testbed.Admin(t)
	host, port := testbed.PostgresHostPort(t)
	id := "obs" + strconv.FormatInt(time.Now().UnixNano(), 36)
	table, pub := "public."+id+"_outbox", id+"_pub"
	slots := []string{id + "_outboxrelay", id + "_debezium", id + "_recv"}
	t.Cleanup(func() {
		for _, s := range slots {
			testbed.DropSlot(t, admin, s)
		}
		testbed.Exec(t, admin, `DROP PUBLICATION IF EXISTS `+pub, `DROP TABLE IF EXISTS `+table)
	})
	dir := t.TempDir()
	bin := filepath.Join(dir, "outboxrelay")
	if out, err := exec.Command("go", "build", "-o", bin, "../outboxrelay").CombinedOutput(); err != nil {
		t.Fatalf("building outboxrelay: %v\n%s", err, out)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	const events = 20000
	smoke := func(t *testing.T, relay, relayCmd string, extra ...string) *Summary {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		relayLog := filepath.Join(dir, relay+".log")
		args := append([]string{"backlog", "--pg-url", pgURL, "--kafka-brokers", brokers,
			"--events", strconv.Itoa(events), "--rows-per-tx", "1",
			"--table", table, "--publication", pub, "--create", "--grant-to", "debezium",
			"--slot", id + "_" + relay, "--fresh-slot", "--topic-prefix", id + "." + relay + ".",
			"--relay-cmd", relayCmd, "--relay-log", relayLog,
			"--timeout", "2m", "--confirm-timeout", "2s", "--quiet", "500ms", "--progress", "5s"}, extra...)
		var stdout, stderr bytes.Buffer
		err := run(ctx, args, &stdout, &stderr)
		logBytes, _ := os.ReadFile(relayLog)
		if err != nil {
			t.Fatalf("outboxbench with %s: %v\nstderr:\n%s\nrelay log (tail):\n%s", relay, err, stderr.String(), tail(logBytes, 3000))
		}
		var s Summary
		if err := json.Unmarshal(stdout.Bytes(), &s); err != nil {
			t.Fatalf("stdout is not the JSON summary: %v\n%s", err, stdout.String())
		}
		if s.Events != events || s.Received != events || s.Missing != 0 || s.Duplicates != 0 || s.OutOfOrder != 0 || s.Invalid != 0 {
			t.Errorf("%s: events %d received %d missing %d (e.g. %v) duplicates %d out of order %d invalid %d",
				relay, s.Events, s.Received, s.Missing, s.MissingSample, s.Duplicates, s.OutOfOrder, s.Invalid)
		}
		if s.RelayExitCode == nil || s.RelayKilled || s.PeakRSSMiB <= 0 || s.CPUSeconds <= 0 || s.FirstEventSeconds <= 0 {
			t.Errorf("%s did not run and stop cleanly: exit %v killed %v rss %v cpu %v first event %v\nrelay log (tail):\n%s",
				relay, s.RelayExitCode, s.RelayKilled, s.PeakRSSMiB, s.CPUSeconds, s.FirstEventSeconds, tail(logBytes, 3000))
		}
		confirm := "timed out"
		if s.ConfirmSeconds != nil {
			confirm = strconv.FormatFloat(*s.ConfirmSeconds, 'f', 2, 64) + " s"
		}
		t.Logf("%s: %d events, %.0f events/s, first event after %.2f s, peak RSS %.0f MiB, last commit confirmed: %s",
			relay, s.Received, s.ThroughputEPS, s.FirstEventSeconds, s.PeakRSSMiB, confirm)
		return &s
	}
	config := func(relay string) string {
		raw, err := os.ReadFile(filepath.Join(root, "testdata", "connector.json"))
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Name   string         `json:"name"`
			Config map[string]any `json:"config"`
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		c := doc.Config
		doc.Name = id + "_" + relay
		c["database.hostname"], c["database.port"] = host, strconv.Itoa(port)
		c["slot.name"], c["publication.name"] = id+"_"+relay, pub
		c["table.include.list"] = strings.ReplaceAll(table, ".", `\.`)
		c["transforms.outbox.route.topic.replacement"] = id + "." + relay + "." + c["transforms.outbox.route.topic.replacement"].(string)
		out, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, relay+".json")
		if err := os.WriteFile(path, out, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}

	t.Run("outboxrelay+pg_recvlogical", func(t *testing.T) {
		s := smoke(t, "outboxrelay", bin+" run --config "+config("outboxrelay")+" --kafka-brokers "+brokers,
			"--recvlogical-slot", id+"_recv")
		if s.RelayExitCode != nil && *s.RelayExitCode != 0 {
			t.Errorf("outboxrelay exited with %d after SIGTERM, want 0", *s.RelayExitCode)
		}
		if s.Recvlogical == nil || s.Recvlogical.ThroughputEPS <= 0 {
			t.Errorf("pg_recvlogical did not finish: %+v", s.Recvlogical)
		}
		if s.ConfirmSeconds == nil {
			t.Errorf("outboxrelay's slot did not confirm the last commit (at %s, target %s)", s.ConfirmedLSN, s.TargetLSN)
		}
	})
	t.Run("debezium", func(t *testing.T) {
		script := filepath.Join(root, "scripts", "debezium")
		if out, err := exec.Command(script, "fetch").CombinedOutput(); err != nil {
			if testbed.Required() {
				t.Fatalf("scripts/debezium fetch: %v\n%s", err, out)
			}
			t.Skipf("Debezium unavailable (scripts/debezium fetch: %v); make test runs this part", err)
		}
		// Connect's default offset flush (60 s), as in scripts/compare:
		// its slot confirms late, which outboxbench reports, not waits for.
		s := smoke(t, "debezium", "env DEBEZIUM_OFFSET_FLUSH_MS=60000 DEBEZIUM_RUN_DIR="+filepath.Join(dir, "connect")+" "+script+" run-connector "+config("debezium"))
		// 143: the JVM's exit on SIGTERM after Connect's shutdown hook.
		if s.RelayExitCode != nil && *s.RelayExitCode != 0 && *s.RelayExitCode != 143 {
			t.Errorf("Connect exited with %d after SIGTERM", *s.RelayExitCode)
		}
	})
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
