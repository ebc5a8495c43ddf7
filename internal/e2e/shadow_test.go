package e2e_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
)

const envShadow = "OUTBOXRELAY_SHADOW"

// TestDebeziumShadow is the shadow run of issue 25: Debezium 3.7.1 on Kafka
// Connect distributed streams the fixture's connector JSON under the
// cut-over's steady 500 events/s over 50 aggregates; outboxrelay starts
// beside it on the same file with --shadow (a slot, an offsets topic and
// topics of its own) while the load runs, and both stream for
// OUTBOXRELAY_SHADOW (make shadow: 10m; make test: 45s). Then `outboxrelay
// verify --shadow` matches the two sets of topics record by record by event
// id: no difference but the documented ones, the events committed before
// the shadow's slot existed named as such. Last, one record is planted in
// a shadow topic (an event sent again with an altered value): verify finds
// it, names its event id, and exits 1.
func TestDebeziumShadow(t *testing.T) {
	d := os.Getenv(envShadow)
	if d == "" {
		t.Skipf("skipping: the shadow run runs a Kafka Connect worker for minutes; set %s to its duration, e.g. 10m (make shadow)", envShadow)
	}
	phase, err := time.ParseDuration(d)
	if err != nil || phase < 10*time.Second {
		t.Fatalf("%s=%q: want a duration of 10s or more", envShadow, d)
	}
	f := newFixture(t, "shadow")
	offsetsTopic := f.name + ".connect-offsets"
	w := startConnectDistributed(t, f, offsetsTopic, 5000)
	cfg := f.config(t, map[string]string{"offsets.storage.topic": offsetsTopic, "topic.creation.default.partitions": "3"})
	w.script(t, "create", cfg)
	w.waitRunning(t, f.name)
	f.waitStreaming(t)
	l := startCutoverLoad(t, f)
	time.Sleep(5 * time.Second) // Debezium alone: these come before the shadow

	brokers := testbed.KafkaBrokers(t)
	checkStarted := time.Now()
	out, code := runRelayCommand(t, "check", "--shadow", "--config", cfg, "--kafka-brokers", brokers, "--timeout", "2m")
	if code != 0 || !strings.Contains(out, "✓ start: the relay creates slot "+f.name+"_shadow") {
		t.Errorf("check --shadow beside the live connector exited %d; want 0 and the shadow slot's creation predicted:\n%s", code, out)
	}
	t.Logf("check --shadow took %s", time.Since(checkStarted).Round(time.Millisecond))
	sh := startProcess(t, "shadow", nil, relayBinary, "run", "--shadow", "--config", cfg, "--kafka-brokers", brokers, "--log-format", "text")
	waitSlotActive(t, f, f.name+"_shadow")
	time.Sleep(phase)
	events, stats := l.finish(t)
	t.Logf("load: %s", stats)
	end := walLSN(t, f.admin)
	topics := make([]string, len(cutoverTypes))
	for i, typ := range cutoverTypes {
		topics[i] = f.topic(typ)
	}
	waitAllDelivered(t, topics, events, 90*time.Second)
	deadline := time.Now().Add(90 * time.Second)
	for confirmedFlush(t, f.admin, f.name+"_shadow") < end && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	sh.stop(t, 30*time.Second)
	if !strings.Contains(sh.log(), "shadow run:") || strings.Contains(sh.log(), offsetsTopic) && !strings.Contains(sh.log(), "outboxrelay-shadow-offsets") {
		t.Errorf("the shadow's log does not say what it overrode:\n%s", sh.logTail(20))
	}
	if rec := (connectOffsets{topic: offsetsTopic, key: `["` + f.name + `",{"server":"` + f.name + `"}]`}).current(t); strings.Contains(rec.String(), "outboxrelay") {
		t.Errorf("the shadow wrote the connector's offsets record: %s", rec)
	}

	out, code = runRelayCommand(t, "verify", "--shadow", "--config", cfg, "--kafka-brokers", brokers, "--timeout", "5m")
	t.Logf("outboxrelay verify --shadow after %s of shadow run (%d events):\n%s", phase, len(events), out)
	if code != 0 || !strings.Contains(out, "differences 0, only live 0, only shadow 0, keys out of order 0") || !strings.Contains(out, "before the shadow started") {
		t.Fatalf("verify --shadow exited %d; want 0 with no counted difference", code)
	}

	// A planted difference: an event sent again into the shadow's topic
	// with an altered value. The topics named with --topics, as for an
	// outbox whose rows are deleted as they are inserted.
	planted := plantAltered(t, brokers, "shadow."+topics[0])
	out, code = runRelayCommand(t, "verify", "--shadow", "--topics", strings.Join(topics, ","), "--config", cfg, "--kafka-brokers", brokers, "--timeout", "5m")
	if code != 1 || !strings.Contains(out, "difference: event "+planted+":") {
		t.Fatalf("verify --shadow after an altered record of event %s was planted exited %d; want 1 naming it:\n%s", planted, code, out)
	}
	t.Logf("the planted record of event %s was found:\n%s", planted, strings.Join(grepLines(out, "difference"), "\n"))
}

// runRelayCommand runs the relay binary with args and returns its output
// and exit code.
func runRelayCommand(t *testing.T, args ...string) (string, int) {
	t.Helper()
	out, err := exec.Command(relayBinary, args...).CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return string(out), exit.ExitCode()
	}
	if err != nil {
		t.Fatalf("outboxrelay %s: %v", args[0], err)
	}
	return string(out), 0
}

// waitSlotActive waits until a walsender streams from slot.
func waitSlotActive(t *testing.T, f *fixture, slot string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		var ok bool
		err := f.admin.QueryRow(context.Background(), `SELECT active AND confirmed_flush_lsn IS NOT NULL FROM pg_replication_slots WHERE slot_name = $1`, slot).Scan(&ok)
		if err == nil && ok {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no walsender streams from slot %s after 60 s", slot)
}

// plantAltered writes the middle record of topic's partition 0 again on
// the same partition with its value altered, and returns its event id.
func plantAltered(t *testing.T, brokers, topic string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := kafka.DialLeader(ctx, "tcp", strings.Split(brokers, ",")[0], topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	first, last, err := conn.ReadOffsets()
	if err != nil || last <= first {
		t.Fatalf("offsets of %s/0: %d..%d, %v", topic, first, last, err)
	}
	if _, err := conn.Seek((first+last)/2, kafka.SeekAbsolute); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	m, err := conn.ReadMessage(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	var id string
	for _, h := range m.Headers {
		if h.Key == "id" {
			id = string(h.Value)
		}
	}
	_ = conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.WriteMessages(kafka.Message{Key: m.Key, Headers: m.Headers, Value: []byte(`{"n":"altered"}`)}); err != nil {
		t.Fatal(err)
	}
	return id
}
