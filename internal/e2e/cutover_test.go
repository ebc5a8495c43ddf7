package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/outboxrelay/outboxrelay/internal/kafkaread"
	"github.com/outboxrelay/outboxrelay/internal/testbed"
	"github.com/outboxrelay/outboxrelay/internal/verify"
)

// envCutover opts in to TestDebeziumCutOver (make cutover): it starts a
// Kafka Connect worker, a JVM, and takes a few minutes.
const envCutover = "OUTBOXRELAY_CUTOVER"

// The cut-over load: cutoverRate events/s, one outbox row per transaction,
// over cutoverAggregates aggregates ("agg-K"; aggregate type "customer"
// when K is a multiple of 5, else "order": two routed topics).
const (
	cutoverRate       = 500
	cutoverAggregates = 50
)

var cutoverTypes = []string{"order", "customer"}

// TestDebeziumCutOver replaces a running Debezium under load and goes
// back, in one run, on one slot and one offsets topic (issue 25, "Must
// show"): Debezium 3.7.1 on Kafka Connect distributed (offsets in a Kafka
// topic of 25 partitions) streams the fixture's connector JSON; the
// connector is stopped with Connect's stop API (its task ends with a final
// offset commit) and outboxrelay starts on the same JSON with
// offsets.storage.topic naming the worker's offsets topic; outboxrelay is
// stopped (SIGTERM) and the Debezium connector resumed; the Connect worker
// is SIGKILLed (no final commit) and outboxrelay starts again. Each
// producer streams for OUTBOXRELAY_CUTOVER_PHASE (default 20 s) under a
// steady 500 events/s.
//
// At the end every routed topic is read and each record attributed to the
// producer that wrote it (by the topics' end offsets at each switch):
// nothing may be missing; an event delivered twice across the graceful
// switch or the way back fails the test; across the crash only events
// after the position Debezium last committed (read from the offsets topic
// after the kill) may come again; first deliveries follow commit order per
// aggregate, and each aggregate stays on one partition. Before each start
// of outboxrelay, `outboxrelay check` on the same config must pass and
// print "resume at".
func TestDebeziumCutOver(t *testing.T) {
	if os.Getenv(envCutover) != "1" {
		t.Skipf("skipping: the Debezium cut-over runs a Kafka Connect worker for minutes; set %s=1 (make cutover)", envCutover)
	}
	phase := cutoverPhase(t)
	flushMS := cutoverFlushMS(t)
	started := time.Now()
	f := newFixture(t, "cutover")
	offsetsTopic := f.name + ".connect-offsets"
	w := startConnectDistributed(t, f, offsetsTopic, flushMS)
	cfg := f.config(t, map[string]string{
		"offsets.storage.topic":             offsetsTopic,
		"topic.creation.default.partitions": "3",
	})
	topics := make([]string, len(cutoverTypes))
	for i, typ := range cutoverTypes {
		topics[i] = f.topic(typ)
	}
	offsets := connectOffsets{topic: offsetsTopic, key: fmt.Sprintf(`[%q,{"server":%q}]`, f.name, f.name)}

	// a. Debezium streams, then its connector is stopped.
	w.script(t, "create", cfg)
	w.waitRunning(t, f.name)
	f.waitStreaming(t)
	l := startCutoverLoad(t, f)
	time.Sleep(phase)
	w.script(t, "stop", f.name) // waits for STOPPED with no task left
	waitSlotInactive(t, f.admin, f.name, 30*time.Second)
	graceful := offsets.current(t)
	bounds := []map[string]map[int]int64{endOffsetsOf(t, topics)}
	t.Logf("graceful switch: the connector is STOPPED; recorded %s; slot confirmed_flush_lsn %s", graceful, confirmedFlush(t, f.admin, f.name))

	// outboxrelay on the same JSON, slot and offsets.
	requireCheckResumes(t, "graceful switch", cfg)
	r := startRelay(t, cfg)
	f.waitStreaming(t)
	time.Sleep(phase)
	relayCPU := 0.0
	r.stop(t, 30*time.Second)
	relayCPU += cpuSeconds(r.cmd.ProcessState)
	logPositionLines(t, "outboxrelay after the graceful switch", r)
	waitSlotInactive(t, f.admin, f.name, 30*time.Second)
	back := offsets.current(t)
	bounds = append(bounds, endOffsetsOf(t, topics))
	t.Logf("way back: outboxrelay stopped; recorded %s; slot confirmed_flush_lsn %s", back, confirmedFlush(t, f.admin, f.name))

	// b. Debezium's connector resumed on outboxrelay's recorded position.
	w.script(t, "resume", f.name)
	f.waitStreaming(t)
	time.Sleep(phase)

	// c. The worker SIGKILLed a few seconds after an offset commit, so
	// that a window of published but uncommitted events is lost.
	committedAt, committed := offsets.waitChange(t, offsets.current(t), time.Duration(3*flushMS)*time.Millisecond)
	time.Sleep(time.Until(committedAt.Add(time.Duration(flushMS*3/5) * time.Millisecond)))
	workerCPU, workerPeakMiB := w.usage(t)
	killedAt := time.Now()
	w.script(t, "kill")
	waitSlotInactive(t, f.admin, f.name, 30*time.Second)
	time.Sleep(time.Second) // anything the dead producer had on the wire has landed
	crash := offsets.current(t)
	bounds = append(bounds, endOffsetsOf(t, topics))
	if crash.partition != committed.partition || crash.offset != committed.offset {
		t.Logf("crash switch: the worker committed again between the commit seen at %s and the kill", committedAt.Format(time.StampMilli))
	}
	t.Logf("crash switch: SIGKILL sent to the worker %s after the offset commit seen; recorded %s; slot confirmed_flush_lsn %s",
		killedAt.Sub(committedAt).Round(10*time.Millisecond), crash, confirmedFlush(t, f.admin, f.name))

	requireCheckResumes(t, "crash switch", cfg)
	r = startRelay(t, cfg)
	f.waitStreaming(t)
	time.Sleep(phase)
	events, stats := l.finish(t)
	t.Logf("load: %s", stats)
	if stats.rate() < 0.9*cutoverRate {
		t.Errorf("the load reached %.0f events/s, not the %d it was asked for", stats.rate(), cutoverRate)
	}
	f.requireOutboxRows(t, len(events))
	deliveries := waitAllDelivered(t, topics, events, 90*time.Second)
	r.stop(t, 30*time.Second)
	relayCPU += cpuSeconds(r.cmd.ProcessState)
	logPositionLines(t, "outboxrelay after the crash", r)

	a := analyzeCutover(events, deliveries, bounds, crash.TxID)
	t.Logf("cut-over: %s", a)
	if !a.report.OK() || len(a.report.Unknown) != 0 {
		t.Errorf("want every event delivered once at least, first deliveries in commit order per aggregate, no unknown records:\n%s", a.report)
	}
	for key, parts := range a.splitKeys {
		t.Errorf("aggregate %s is on partitions %v: the two producers placed it differently", key, parts)
	}
	if graceful.TxID == nil || *graceful.TxID != a.lastXID[segDebezium1] {
		t.Errorf("graceful switch: Debezium's recorded position %s is not its last published event (txId %d): Connect's final offset commit did not cover what the task sent",
			graceful, a.lastXID[segDebezium1])
	}
	if n := a.dups[switchGraceful]; n != 0 {
		t.Errorf("graceful switch: %d events delivered by Debezium and again by outboxrelay (%s); want 0: outboxrelay must resume after Debezium's recorded position %s",
			n, a.sample[switchGraceful], graceful)
	}
	if n := a.dups[switchBack]; n != 0 {
		t.Errorf("way back: %d events delivered by outboxrelay and again by Debezium (%s); want 0: Debezium must resume after outboxrelay's recorded position %s",
			n, a.sample[switchBack], back)
	}
	if n := a.dups[switchOther]; n != 0 {
		t.Errorf("%d events delivered twice within one producer's run or across two switches (%s); want 0", n, a.sample[switchOther])
	}
	if a.crashCommitted < 0 {
		t.Errorf("crash switch: no event of the load has txId %v, the one of Debezium's last committed position %s", crash.TxID, crash)
	}
	if a.crashBefore != 0 {
		t.Errorf("crash switch: %d events at or before Debezium's last committed position %s delivered again (%s); only events after it may be",
			a.crashBefore, crash, a.sample[switchCrash])
	}
	t.Logf("took %s (phases of %s, offset.flush.interval.ms=%d); CPU: Connect worker %.1f s (until the kill; peak RSS %.0f MiB), outboxrelay %.1f s (both runs), test process %.1f s",
		time.Since(started).Round(time.Second), phase, flushMS, workerCPU, workerPeakMiB, relayCPU, selfCPUSeconds(t))
}

// requireCheckResumes runs `outboxrelay check` on the cut-over config
// while no one streams from the slot: it must pass and say where `run`
// will resume (issue 25: check predicts the start). A failure is marked
// and the run goes on.
func requireCheckResumes(t *testing.T, what, cfg string) {
	t.Helper()
	if relayBinary == "" {
		t.Fatal("the relay binary was not built")
	}
	out, err := exec.Command(relayBinary, "check", "--config", cfg, "--kafka-brokers", testbed.KafkaBrokers(t), "--timeout", "30s").CombinedOutput()
	switch {
	case err != nil:
		t.Errorf("%s: outboxrelay check failed (%v); want it to pass and print \"resume at\":\n%s", what, err, out)
	case !strings.Contains(string(out), "resume at"):
		t.Errorf("%s: outboxrelay check passed without saying where run resumes (no \"resume at\"):\n%s", what, out)
	default:
		t.Logf("%s: outboxrelay check:\n%s", what, out)
	}
}

// logPositionLines logs the relay's log lines about the position it
// resumed from, for the note.
func logPositionLines(t *testing.T, what string, r *relayProc) {
	t.Helper()
	var lines []string
	for _, line := range strings.Split(r.log(), "\n") {
		if strings.Contains(line, "position") || strings.Contains(line, "resum") {
			lines = append(lines, line)
		}
	}
	t.Logf("%s, its log about positions:\n%s", what, strings.Join(lines, "\n"))
}

func cutoverPhase(t *testing.T) time.Duration {
	t.Helper()
	v := os.Getenv("OUTBOXRELAY_CUTOVER_PHASE")
	if v == "" {
		return 20 * time.Second
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 5*time.Second {
		t.Fatalf("OUTBOXRELAY_CUTOVER_PHASE=%q: want a duration of 5s or more", v)
	}
	return d
}

// cutoverFlushMS is the worker's offset.flush.interval.ms: 5000, or
// OUTBOXRELAY_CUTOVER_FLUSH_MS. Connect's default is 60000; a shorter one
// lets each phase see several commits and the crash a window of a few
// seconds.
func cutoverFlushMS(t *testing.T) int {
	t.Helper()
	v := os.Getenv("OUTBOXRELAY_CUTOVER_FLUSH_MS")
	if v == "" {
		return 5000
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 500 {
		t.Fatalf("OUTBOXRELAY_CUTOVER_FLUSH_MS=%q: want milliseconds, 500 or more", v)
	}
	return n
}

// connectWorker is a Kafka Connect distributed worker started with
// scripts/debezium, its state in a directory of the test.
type connectWorker struct {
	bin string   // scripts/debezium
	env []string // DEBEZIUM_MODE, state dir, group and topics
	url string   // its REST API
	dir string
}

// startConnectDistributed starts a worker of a group of its own, its
// config and status topics under the fixture's prefix (removed with it)
// and its offsets in offsetsTopic (25 partitions, Connect's default). The
// worker is killed at the end of the test; its log is printed when the
// test failed.
func startConnectDistributed(t *testing.T, f *fixture, offsetsTopic string, flushMS int) *connectWorker {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("..", "..", "scripts", "debezium"))
	if err != nil {
		t.Fatal(err)
	}
	w := &connectWorker{bin: script, dir: t.TempDir()}
	w.env = []string{
		"DEBEZIUM_MODE=distributed",
		"OUTBOXRELAY_DEBEZIUM_DIR=" + w.dir,
		"DEBEZIUM_GROUP_ID=" + f.name,
		"DEBEZIUM_OFFSETS_TOPIC=" + offsetsTopic,
		"DEBEZIUM_OFFSETS_PARTITIONS=25",
		"DEBEZIUM_CONFIGS_TOPIC=" + f.name + ".connect-configs",
		"DEBEZIUM_STATUS_TOPIC=" + f.name + ".connect-status",
		"DEBEZIUM_OFFSET_FLUSH_MS=" + strconv.Itoa(flushMS),
		"DEBEZIUM_HEAP=384m",
	}
	t.Cleanup(func() {
		if _, err := w.run("pid"); err == nil {
			if _, err := w.run("kill"); err != nil {
				t.Errorf("clean-up: %v", err)
			}
		}
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(w.dir, "connect.log"))
			lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
			if len(lines) > 80 {
				lines = lines[len(lines)-80:]
			}
			t.Logf("Kafka Connect log, last lines:\n%s", strings.Join(lines, "\n"))
		}
	})
	out := w.script(t, "up")
	w.url = testbed.ParseExports(out)["OUTBOXRELAY_DEBEZIUM_URL"]
	if w.url == "" {
		t.Fatalf("scripts/debezium up printed no OUTBOXRELAY_DEBEZIUM_URL:\n%s", out)
	}
	return w
}

// run runs scripts/debezium with args; the error carries its stderr.
func (w *connectWorker) run(args ...string) (string, error) {
	cmd := exec.Command(w.bin, args...)
	cmd.Env = append(os.Environ(), w.env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 10 * time.Second // the worker it starts must not keep our pipes
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("scripts/debezium %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

func (w *connectWorker) script(t *testing.T, args ...string) string {
	t.Helper()
	out, err := w.run(args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// waitRunning waits until the connector and its task run.
func (w *connectWorker) waitRunning(t *testing.T, name string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		var st struct {
			Connector struct{ State string } `json:"connector"`
			Tasks     []struct {
				State string `json:"state"`
				Trace string `json:"trace"`
			} `json:"tasks"`
		}
		res, err := http.Get(w.url + "/connectors/" + name + "/status")
		if err == nil {
			err = json.NewDecoder(res.Body).Decode(&st)
			res.Body.Close()
		}
		if err == nil {
			last = fmt.Sprintf("connector %s, tasks %v", st.Connector.State, st.Tasks)
			if len(st.Tasks) == 1 && st.Tasks[0].State == "FAILED" {
				t.Fatalf("Debezium's task failed: %s", st.Tasks[0].Trace)
			}
			if st.Connector.State == "RUNNING" && len(st.Tasks) == 1 && st.Tasks[0].State == "RUNNING" {
				return
			}
		} else {
			last = err.Error()
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("connector %s not running after 60 s: %s", name, last)
}

// usage is the worker's user and system CPU so far (/proc/PID/stat) and
// its peak resident set (VmHWM); call it before stopping the worker.
func (w *connectWorker) usage(t *testing.T) (cpu, peakMiB float64) {
	t.Helper()
	pid := strings.TrimSpace(w.script(t, "pid"))
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		t.Fatalf("reading the worker's CPU time: %v", err)
	}
	// The fields after the command name, which is in parentheses:
	// utime and stime are the 14th and 15th of the line.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("parsing /proc/%s/stat: %q", pid, s)
	}
	n, _ := strconv.Atoi(pid)
	hwm, _ := procStatusKiB(n, "VmHWM")
	return float64(utime+stime) / 100, float64(hwm) / 1024 // USER_HZ, KiB
}

func cpuSeconds(ps *os.ProcessState) float64 {
	if ps == nil {
		return 0
	}
	return (ps.UserTime() + ps.SystemTime()).Seconds()
}

func selfCPUSeconds(t *testing.T) float64 {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// connectOffsets reads one connector's record in a Connect offsets topic.
type connectOffsets struct {
	topic string
	key   string // ["<name>",{"server":"<topic.prefix>"}], as Connect's JsonConverter writes it
}

// sourceOffset is a recorded PostgreSQL position: Debezium's fields (those
// outboxrelay writes are a subset) and where the record is.
type sourceOffset struct {
	LSN       *int64  `json:"lsn"`
	LSNCommit *int64  `json:"lsn_commit"`
	LSNProc   *int64  `json:"lsn_proc"`
	TxID      *int64  `json:"txId"`
	TsUsec    *int64  `json:"ts_usec"`
	Message   *string `json:"messageType"`
	raw       string
	partition int
	offset    int64
}

func (o sourceOffset) String() string {
	if o.raw == "" {
		return "nothing"
	}
	return fmt.Sprintf("%s (partition %d, offset %d)", o.raw, o.partition, o.offset)
}

// all returns every record of the connector's key, in offset order of
// each partition.
func (c connectOffsets) all(t *testing.T) []sourceOffset {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	msgs, err := kafkaread.Reader{Broker: testbed.KafkaBrokers(t)}.Topic(ctx, c.topic)
	if err != nil {
		t.Fatalf("reading %s: %v", c.topic, err)
	}
	var out []sourceOffset
	for _, m := range msgs {
		if string(m.Key) != c.key || m.Value == nil {
			continue
		}
		var o sourceOffset
		if err := json.Unmarshal(m.Value, &o); err != nil {
			t.Fatalf("%s partition %d offset %d: value %q is not a position: %v", c.topic, m.Partition, m.Offset, m.Value, err)
		}
		o.raw, o.partition, o.offset = string(m.Value), m.Partition, m.Offset
		out = append(out, o)
	}
	return out
}

// current is the connector's position as a worker reading the topic would
// find it: the last record of its key. Records of the key on more than one
// partition fail the test: Connect reads the partitions in no set order,
// so which one wins is chance.
func (c connectOffsets) current(t *testing.T) sourceOffset {
	t.Helper()
	recs := c.all(t)
	if len(recs) == 0 {
		t.Fatalf("no record of %s in %s", c.key, c.topic)
	}
	parts := map[int]bool{}
	for _, r := range recs {
		parts[r.partition] = true
	}
	if len(parts) > 1 {
		t.Errorf("records of %s on %d partitions of %s; Connect finds one of them by chance: %v", c.key, len(parts), c.topic, recs)
	}
	return recs[len(recs)-1]
}

// waitChange waits until a record other than since is the current one
// (the worker committed offsets) and returns when it saw it, and it.
func (c connectOffsets) waitChange(t *testing.T, since sourceOffset, timeout time.Duration) (time.Time, sourceOffset) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if cur := c.current(t); cur.partition != since.partition || cur.offset != since.offset {
			return time.Now(), cur
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no offset commit in %s within %s after %s", c.topic, timeout, since)
	return time.Time{}, sourceOffset{}
}

// endOffsetsOf is the end offset of every partition of each topic.
func endOffsetsOf(t *testing.T, topics []string) map[string]map[int]int64 {
	t.Helper()
	out := map[string]map[int]int64{}
	for _, topic := range topics {
		ends, err := kafkaread.Reader{Broker: testbed.KafkaBrokers(t)}.EndOffsets(context.Background(), topic)
		if err != nil {
			t.Fatal(err)
		}
		out[topic] = ends
	}
	return out
}

// cutoverEvent is one committed outbox row of the cut-over load.
type cutoverEvent struct {
	id  int64
	key string
	xid int64 // its transaction's id, as Debezium records txId
}

type cutoverLoad struct {
	stopOnce sync.Once
	stop     chan struct{}
	done     chan struct{}
	// Owned by the goroutine until done is closed.
	events  []cutoverEvent
	elapsed time.Duration
	err     error
}

type cutoverStats struct {
	events  int
	elapsed time.Duration
}

func (s cutoverStats) rate() float64 { return float64(s.events) / s.elapsed.Seconds() }

func (s cutoverStats) String() string {
	return fmt.Sprintf("%d events, one per transaction, in %s (%.0f events/s) over %d aggregates", s.events, s.elapsed.Round(time.Millisecond), s.rate(), cutoverAggregates)
}

// startCutoverLoad inserts cutoverRate rows a second, each its own
// transaction, from one connection: commit order is the order of the
// rows, and of their ids.
func startCutoverLoad(t *testing.T, f *fixture) *cutoverLoad {
	t.Helper()
	conn := connect(t)
	insert := fmt.Sprintf(`INSERT INTO %s.outbox (aggregatetype, aggregateid, payload) VALUES ($1, $2, jsonb_build_object('n', $3::bigint))
		RETURNING id, pg_current_xact_id()::text::bigint %% 4294967296`, f.name)
	l := &cutoverLoad{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		started := time.Now()
		defer func() { l.elapsed = time.Since(started) }()
		next := started
		for n := 0; ; n++ {
			next = next.Add(time.Second / cutoverRate)
			if wait := time.Until(next); wait > 0 {
				select {
				case <-l.stop:
					return
				case <-time.After(wait):
				}
			} else {
				select {
				case <-l.stop:
					return
				default:
				}
			}
			k := n * 7 % cutoverAggregates
			typ := cutoverTypes[0]
			if k%5 == 0 {
				typ = cutoverTypes[1]
			}
			ev := cutoverEvent{key: "agg-" + strconv.Itoa(k)}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			err := conn.QueryRow(ctx, insert, typ, ev.key, n).Scan(&ev.id, &ev.xid)
			cancel()
			if err != nil {
				l.err = fmt.Errorf("cut-over load, row %d: %w", n, err)
				return
			}
			l.events = append(l.events, ev)
		}
	}()
	t.Cleanup(l.halt)
	return l
}

func (l *cutoverLoad) halt() {
	l.stopOnce.Do(func() { close(l.stop) })
	<-l.done
}

// finish stops the load and returns its events in commit order.
func (l *cutoverLoad) finish(t *testing.T) ([]cutoverEvent, cutoverStats) {
	t.Helper()
	l.halt()
	if l.err != nil {
		t.Fatal(l.err)
	}
	return l.events, cutoverStats{events: len(l.events), elapsed: l.elapsed}
}

// requireOutboxRows fails the test unless the outbox holds want rows: no
// commit went unseen by the load.
func (f *fixture) requireOutboxRows(t *testing.T, want int) {
	t.Helper()
	var n int
	if err := f.admin.QueryRow(context.Background(), `SELECT count(*) FROM `+f.name+`.outbox`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != want {
		t.Fatalf("the outbox holds %d rows, the load committed %d", n, want)
	}
}

// waitAllDelivered reads the topics until every event arrived, or until
// timeout, and returns what they hold.
func waitAllDelivered(t *testing.T, topics []string, events []cutoverEvent, timeout time.Duration) []verify.Delivery {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		ds, err := verify.Topics(ctx, &kafka.Dialer{Timeout: 10 * time.Second}, testbed.KafkaBrokers(t), topics, "id")
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		seen := make(map[string]bool, len(ds))
		for _, d := range ds {
			seen[d.ID] = true
		}
		missing := 0
		for _, ev := range events {
			if !seen[strconv.FormatInt(ev.id, 10)] {
				missing++
			}
		}
		if missing == 0 || time.Now().After(deadline) {
			return ds
		}
		time.Sleep(time.Second)
	}
}

// The four producers of a cut-over run, in turn, and the switches between
// them.
const (
	segDebezium1 = iota // Debezium, until its connector is stopped
	segRelay1           // outboxrelay, until SIGTERM
	segDebezium2        // Debezium resumed, until the worker is killed
	segRelay2           // outboxrelay after the crash
)

var segNames = []string{"Debezium", "outboxrelay", "Debezium resumed", "outboxrelay after the crash"}

const (
	switchGraceful = iota // delivered by segDebezium1 and segRelay1
	switchBack            // segRelay1 and segDebezium2
	switchCrash           // segDebezium2 and segRelay2
	switchOther           // twice by one producer, or by producers further apart
)

var switchNames = []string{"graceful switch", "way back", "crash switch", "other"}

// cutoverAnalysis is what a cut-over run delivered, per producer and per
// switch.
type cutoverAnalysis struct {
	report    verify.Report
	delivered [4]int   // records per producer
	first     [4]int   // events first delivered by each producer
	lastXID   [4]int64 // txId of the last event (in commit order) each producer delivered
	dups      [4]int   // extra deliveries per switch
	sample    [4]string
	// crashWindow: events after the position Debezium committed last, that
	// the killed worker had delivered; crashBefore: events at or before it
	// delivered again after the crash.
	crashCommitted int // index of the event of txId in commit order (-1: not found)
	crashWindow    int
	crashBefore    int
	splitKeys      map[string][]int // aggregate → partitions, when more than one
}

// analyzeCutover checks the deliveries with verify.Check (commit order:
// the load's order) and attributes each record to the producer that wrote
// it: bounds[i] holds the end offsets of every topic's partitions when
// producer i stopped. crashTxID is the txId Debezium recorded last before
// the kill. Pure: a table test pins it.
func analyzeCutover(events []cutoverEvent, deliveries []verify.Delivery, bounds []map[string]map[int]int64, crashTxID *int64) cutoverAnalysis {
	a := cutoverAnalysis{crashCommitted: -1, splitKeys: map[string][]int{}}
	evs := make([]verify.Event, len(events))
	index := make(map[string]int, len(events))
	for i, ev := range events {
		id := strconv.FormatInt(ev.id, 10)
		evs[i] = verify.Event{ID: id, Key: ev.key, Order: int64(i)}
		index[id] = i
		if crashTxID != nil && ev.xid == *crashTxID {
			a.crashCommitted = i
		}
	}
	a.report = verify.Check(evs, deliveries)
	segOf := func(d verify.Delivery) int {
		for i, b := range bounds {
			if d.Offset < b[d.Topic][d.Partition] {
				return i
			}
		}
		return len(bounds)
	}
	sorted := append([]verify.Delivery(nil), deliveries...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].Topic != sorted[j].Topic {
			return sorted[i].Topic < sorted[j].Topic
		}
		if sorted[i].Partition != sorted[j].Partition {
			return sorted[i].Partition < sorted[j].Partition
		}
		return sorted[i].Offset < sorted[j].Offset
	})
	segs := map[string][]int{} // event id → producers, in delivery order
	last := [4]int{-1, -1, -1, -1}
	keyParts := map[string]map[int]bool{}
	for _, d := range sorted {
		i, ok := index[d.ID]
		if !ok {
			continue // verify.Check reports it as unknown
		}
		s := segOf(d)
		a.delivered[s]++
		if len(segs[d.ID]) == 0 {
			a.first[s]++
		}
		segs[d.ID] = append(segs[d.ID], s)
		last[s] = max(last[s], i)
		if keyParts[d.Key] == nil {
			keyParts[d.Key] = map[int]bool{}
		}
		keyParts[d.Key][d.Partition] = true
	}
	for s, i := range last {
		if i >= 0 {
			a.lastXID[s] = events[i].xid
		}
	}
	for key, parts := range keyParts {
		if len(parts) > 1 {
			for p := range parts {
				a.splitKeys[key] = append(a.splitKeys[key], p)
			}
			sort.Ints(a.splitKeys[key])
		}
	}
	samples := [4][]string{}
	for i, ev := range events {
		id := strconv.FormatInt(ev.id, 10)
		ss := segs[id]
		if len(ss) > 0 && ss[0] == segDebezium2 && i > a.crashCommitted && a.crashCommitted >= 0 {
			a.crashWindow++
		}
		for j := 1; j < len(ss); j++ {
			sw := switchOther
			if ss[j] == ss[0]+1 && j == 1 && (len(ss) == 2) {
				sw = ss[0] // the switch after producer ss[0]
			}
			a.dups[sw]++
			if len(samples[sw]) < 5 {
				samples[sw] = append(samples[sw], fmt.Sprintf("id %s (#%d, %s)", id, i, segList(ss)))
			}
			if sw == switchCrash && i <= a.crashCommitted {
				a.crashBefore++
			}
		}
	}
	for sw := range samples {
		a.sample[sw] = strings.Join(samples[sw], ", ")
	}
	return a
}

func segList(ss []int) string {
	names := make([]string, len(ss))
	for i, s := range ss {
		names[i] = segNames[s]
	}
	return strings.Join(names, " then ")
}

func (a cutoverAnalysis) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d events, %d records, missing %d, out of order %d, unknown %d, aggregates on two partitions %d",
		a.report.Events, a.report.Deliveries, len(a.report.Missing), len(a.report.OutOfOrder), len(a.report.Unknown), len(a.splitKeys))
	for s, name := range segNames {
		fmt.Fprintf(&b, "\n  %s: %d records, %d events first delivered", name, a.delivered[s], a.first[s])
	}
	for sw, name := range switchNames {
		fmt.Fprintf(&b, "\n  %s: %d duplicates", name, a.dups[sw])
		if a.sample[sw] != "" {
			fmt.Fprintf(&b, " (e.g. %s)", a.sample[sw])
		}
	}
	fmt.Fprintf(&b, "\n  crash: Debezium's last committed position is event #%d in commit order; it had delivered %d events after it; %d events at or before it came again",
		a.crashCommitted, a.crashWindow, a.crashBefore)
	return b.String()
}

func TestAnalyzeCutover(t *testing.T) {
	events := make([]cutoverEvent, 10)
	for i := range events {
		events[i] = cutoverEvent{id: int64(i + 1), key: "agg-" + strconv.Itoa(i%2), xid: int64(100 + i)}
	}
	xid := func(n int64) *int64 { return &n }
	tests := []struct {
		name      string
		producers [4][]int // indices of events each producer delivered, in turn
		crashTxID *int64
		split     int // an event delivered on partition 1 instead of 0 (-1: none)
		// want
		dups                        [4]int
		committed, window, before   int
		first                       [4]int
		missing, outOfOrder, split2 int
	}{
		{name: "clean", producers: [4][]int{{0, 1, 2}, {3, 4}, {5, 6, 7}, {8, 9}}, crashTxID: xid(107), split: -1,
			committed: 7, first: [4]int{3, 2, 3, 2}},
		{name: "the graceful switch sends the last event again", producers: [4][]int{{0, 1, 2}, {2, 3, 4}, {5, 6, 7}, {8, 9}}, crashTxID: xid(107), split: -1,
			dups: [4]int{1, 0, 0, 0}, committed: 7, first: [4]int{3, 2, 3, 2}},
		{name: "the way back sends one again", producers: [4][]int{{0, 1, 2}, {3, 4}, {4, 5, 6, 7}, {8, 9}}, crashTxID: xid(107), split: -1,
			dups: [4]int{0, 1, 0, 0}, committed: 7, first: [4]int{3, 2, 3, 2}},
		{name: "crash: the uncommitted window comes again", producers: [4][]int{{0, 1, 2}, {3, 4}, {5, 6, 7, 8}, {7, 8, 9}}, crashTxID: xid(106), split: -1,
			dups: [4]int{0, 0, 2, 0}, committed: 6, window: 2, first: [4]int{3, 2, 4, 1}},
		{name: "crash: the committed event comes again", producers: [4][]int{{0, 1, 2}, {3, 4}, {5, 6, 7, 8}, {6, 7, 8, 9}}, crashTxID: xid(106), split: -1,
			dups: [4]int{0, 0, 3, 0}, committed: 6, window: 2, before: 1, first: [4]int{3, 2, 4, 1}},
		{name: "twice by one producer, and across two switches", producers: [4][]int{{0, 1, 1, 2}, {3, 4}, {0, 5, 6, 7}, {8, 9}}, crashTxID: xid(107), split: -1,
			dups: [4]int{0, 0, 0, 2}, committed: 7, first: [4]int{3, 2, 3, 2}},
		{name: "missing, out of order, unknown txId", producers: [4][]int{{0, 3, 1, 2}, {}, {5, 6, 7}, {8, 9}}, crashTxID: xid(999), split: -1,
			committed: -1, first: [4]int{4, 0, 3, 2}, missing: 1, outOfOrder: 1},
		{name: "an aggregate on two partitions", producers: [4][]int{{0, 1, 2}, {3, 4}, {5, 6, 7}, {8, 9}}, crashTxID: xid(107), split: 9,
			committed: 7, first: [4]int{3, 2, 3, 2}, split2: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ds []verify.Delivery
			var bounds []map[string]map[int]int64
			next := map[int]int64{}
			for s, idx := range tt.producers {
				for _, i := range idx {
					p := 0
					if i == tt.split {
						p = 1
					}
					ds = append(ds, verify.Delivery{ID: strconv.FormatInt(events[i].id, 10), Key: events[i].key, Topic: "t", Partition: p, Offset: next[p]})
					next[p]++
				}
				if s < 3 {
					bounds = append(bounds, map[string]map[int]int64{"t": {0: next[0], 1: next[1]}})
				}
			}
			a := analyzeCutover(events, ds, bounds, tt.crashTxID)
			if a.dups != tt.dups || a.crashCommitted != tt.committed || a.crashWindow != tt.window || a.crashBefore != tt.before || a.first != tt.first {
				t.Errorf("dups %v, committed #%d, window %d, before %d, first %v; want %v, #%d, %d, %d, %v",
					a.dups, a.crashCommitted, a.crashWindow, a.crashBefore, a.first, tt.dups, tt.committed, tt.window, tt.before, tt.first)
			}
			if len(a.report.Missing) != tt.missing || len(a.report.OutOfOrder) != tt.outOfOrder || len(a.splitKeys) != tt.split2 {
				t.Errorf("missing %d, out of order %d, split keys %v; want %d, %d, %d", len(a.report.Missing), len(a.report.OutOfOrder), a.splitKeys, tt.missing, tt.outOfOrder, tt.split2)
			}
		})
	}
}
