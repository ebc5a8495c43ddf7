package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/outboxrelay/outboxrelay/capture"
	"github.com/outboxrelay/outboxrelay/replication"
)

// TestMetricsWiring: what the observers report shows up as the documented
// series, and readiness (the status the observer writes) follows the state
// and Kafka's last answer.
func TestMetricsWiring(t *testing.T) {
	inFlight := 0
	st := newStatus()
	m := newMetrics(st, func() (int, int64) { return inFlight, int64(inFlight * 100) })
	commit := time.Now().Add(-2 * time.Second)
	m.State(capture.StateConnected)
	m.State(capture.StateStreaming)
	m.Published("orders", 100, commit)
	m.Published("orders", 50, commit)
	m.Published("payments", 10, time.Time{}) // a snapshot row: no latency
	m.Skipped("update")
	m.Skipped("something_new")
	m.Received(0x1000, 0x1800)
	m.Confirmed(0x1200)
	m.ProduceFailed("network", true)
	m.State(capture.StateRetrying)
	m.State(capture.StateStreaming)
	m.SnapshotProgress(42, true)
	m.Standby(replication.StandbyReplay{InRecovery: true, LagBytes: 4096, LagSeconds: 2.5, SlotInvalidated: "rows_removed"})

	for _, c := range []struct {
		name string
		got  float64
		want float64
	}{
		{"events orders", testutil.ToFloat64(m.published.WithLabelValues("orders")), 2},
		{"bytes orders", testutil.ToFloat64(m.publishedBytes.WithLabelValues("orders")), 150},
		{"events payments", testutil.ToFloat64(m.published.WithLabelValues("payments")), 1},
		{"skipped update", testutil.ToFloat64(m.skipped.WithLabelValues("update")), 1},
		{"skipped new reason", testutil.ToFloat64(m.skipped.WithLabelValues("something_new")), 1},
		{"produce errors", testutil.ToFloat64(m.produceErrors.WithLabelValues("network", "true")), 1},
		{"reconnects", testutil.ToFloat64(m.reconnects), 1},
		{"state streaming", testutil.ToFloat64(m.stateGauge.WithLabelValues("streaming")), 1},
		{"state retrying", testutil.ToFloat64(m.stateGauge.WithLabelValues("retrying")), 0},
		{"snapshot rows", testutil.ToFloat64(m.snapshotRows), 42},
		{"lag bytes", float64(m.lagBytes()), 0x600},
		{"standby replay lag bytes", testutil.ToFloat64(m.replayLagBytes), 4096},
		{"standby replay lag seconds", testutil.ToFloat64(m.replayLagSeconds), 2.5},
		{"standby slot invalidated", testutil.ToFloat64(m.slotInvalidated), 1},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if got := testutil.CollectAndCount(m.commitToAck); got != 1 {
		t.Errorf("commit-to-ack histogram has %d series", got)
	}
	if lag := m.lagSeconds(time.Now()); lag != 0 {
		t.Errorf("lag seconds %v before any status update; want 0", lag)
	}
	m.Pending(commit)
	if lag := m.lagSeconds(time.Now()); lag < 1.5 || lag > 10 {
		t.Errorf("lag seconds %v while a transaction committed 2 s ago waits; want about 2", lag)
	}
	m.Received(0x1800, 0x9000) // other tables write: WAL lag, nothing of ours waits
	m.Pending(time.Time{})
	if lag := m.lagSeconds(time.Now()); lag != 0 {
		t.Errorf("lag seconds %v with every received transaction confirmed; want 0", lag)
	}

	// Readiness: streaming and Kafka's latest answer a recent success.
	if ok, why := st.ready(time.Now()); ok {
		t.Errorf("ready after a produce error and no success: %s", why)
	}
	st.kafkaAnswered(true)
	if ok, why := st.ready(time.Now()); !ok {
		t.Errorf("not ready while streaming with Kafka answering: %s", why)
	}
	if ok, _ := st.ready(time.Now().Add(time.Minute)); ok {
		t.Error("ready a minute after Kafka's last answer")
	}
	st.kafkaAnswered(false)
	if ok, _ := st.ready(time.Now()); ok {
		t.Error("ready although Kafka's last answer was an error")
	}
	st.kafkaAnswered(true)
	m.State(capture.StateStandby)
	if ok, why := st.ready(time.Now()); ok || !strings.Contains(why, "standby") {
		t.Errorf("standby: ready=%v (%s); want not ready, saying standby", ok, why)
	}

	want := []string{
		"outboxrelay_events_published_total", "outboxrelay_published_bytes_total", "outboxrelay_records_in_flight",
		"outboxrelay_bytes_in_flight", "outboxrelay_confirmed_lsn", "outboxrelay_received_lsn",
		"outboxrelay_replication_lag_bytes", "outboxrelay_replication_lag_seconds", "outboxrelay_commit_to_ack_seconds",
		"outboxrelay_kafka_produce_errors_total", "outboxrelay_reconnects_total", "outboxrelay_rows_skipped_total",
		"outboxrelay_dead_lettered_total", "outboxrelay_snapshot_rows", "outboxrelay_snapshot_running",
		"outboxrelay_janitor_deleted_rows_total", "outboxrelay_state", "outboxrelay_ready", "go_goroutines", "process_cpu_seconds_total",
		"outboxrelay_standby_replay_lag_bytes", "outboxrelay_standby_replay_lag_seconds", "outboxrelay_standby_slot_invalidated",
	}
	families, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, f := range families {
		have[f.GetName()] = true
	}
	for _, n := range want {
		if !have[n] {
			t.Errorf("series %s missing from the registry", n)
		}
	}
	if got := capture.LSN(m.confirmed.Load()); got != 0x1800 {
		t.Errorf("confirmed %s, want 0/1800", got)
	}
}

// TestPublishedDoesNotAllocate: the per-event observer call stays off the
// allocator once a topic is known.
func TestPublishedDoesNotAllocate(t *testing.T) {
	m := newMetrics(newStatus(), nil)
	commit := time.Now()
	m.Published("orders", 1, commit)
	if n := testing.AllocsPerRun(1000, func() { m.Published("orders", 100, commit) }); n != 0 {
		t.Errorf("Published allocates %v times per call, want 0", n)
	}
}

// A traced publication's commit-to-ack observation carries its trace id
// as an exemplar, and /metrics shows it in the OpenMetrics exposition.
func TestCommitToAckExemplar(t *testing.T) {
	m := newMetrics(newStatus(), func() (int, int64) { return 0, 0 })
	m.PublishedTraced("orders", 10, time.Now().Add(-20*time.Millisecond), "4bf92f3577b34da6a3ce929d0e0e4736")
	srv := httptest.NewServer(promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg, EnableOpenMetrics: true}))
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	req.Header.Set("Accept", "application/openmetrics-text; version=1.0.0")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if !regexp.MustCompile(`outboxrelay_commit_to_ack_seconds_bucket\{le="0\.04"\} 1 # \{trace_id="4bf92f3577b34da6a3ce929d0e0e4736"\} 0\.0\d+`).Match(body) {
		t.Errorf("no exemplar with the trace id on the 40 ms bucket:\n%s", grepLines(string(body), "outboxrelay_commit_to_ack"))
	}
	if m.events.Load() != 1 {
		t.Errorf("events %d, want 1", m.events.Load())
	}
}
