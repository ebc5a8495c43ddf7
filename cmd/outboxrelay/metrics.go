package main

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/outboxrelay/outboxrelay/capture"
	"github.com/outboxrelay/outboxrelay/poll"
	"github.com/outboxrelay/outboxrelay/relay"
	"github.com/outboxrelay/outboxrelay/replication"
)

// metrics is the process's Prometheus registry and the one observer of
// the source (replication.Observer, poll.Observer), the relay
// (relay.Observer) and the producer (sink.Observer). It writes the states
// and Kafka's answers into status, which /readyz reads.
//
// Hot path: Published runs once per acknowledged record; it does one
// sync.Map lookup of the topic (no allocation once the topic is known),
// two counter adds, one histogram observation and two atomic stores.
type metrics struct {
	reg *prometheus.Registry

	published      *prometheus.CounterVec
	publishedBytes *prometheus.CounterVec
	topics         sync.Map // topic → *topicCounters
	commitToAck    prometheus.Histogram
	produceErrors  *prometheus.CounterVec
	reconnects     prometheus.Counter
	skipped        *prometheus.CounterVec
	skippedBy      map[string]prometheus.Counter // the known reasons, built once, read-only
	deadLettered   prometheus.Counter
	snapshotRows   prometheus.Gauge
	snapshotActive prometheus.Gauge
	janitorDeleted prometheus.Counter
	pollStuck      prometheus.Gauge
	stateGauge     *prometheus.GaugeVec
	// The hot standby's replay and the slot's invalidation there, set by
	// Standby from the failover lock's watcher; 0 on a primary.
	replayLagBytes   prometheus.Gauge
	replayLagSeconds prometheus.Gauge
	slotInvalidated  prometheus.Gauge

	events    atomic.Uint64 // records published, for the progress line's rate
	confirmed atomic.Uint64 // capture.LSN
	received  atomic.Uint64 // capture.LSN: the server's WAL end
	oldest    atomic.Int64  // unix nanos: commit time of the oldest unconfirmed transaction; 0: none
	status    *status       // written by State, Produced and ProduceFailed

	// inFlight reports the records and bytes handed to Kafka and not yet
	// acknowledged (the producer's count); nil before wiring.
	inFlight func() (int, int64)
}

type topicCounters struct {
	events prometheus.Counter
	bytes  prometheus.Counter
}

var (
	_           replication.Observer = (*metrics)(nil)
	_           poll.Observer        = (*metrics)(nil)
	_           relay.Observer       = (*metrics)(nil)
	skipReasons                      = []string{"update", "delete", "truncate", "other_table", "logical_message", "routed_to_nothing"}
)

// newMetrics builds a fresh registry (never the global one: two relays in
// one process, as in the tests, must not share series) with the Go runtime
// and process collectors and every outboxrelay series. It writes states and
// Kafka's answers into st.
func newMetrics(st *status, inFlight func() (int, int64)) *metrics {
	m := &metrics{reg: prometheus.NewRegistry(), inFlight: inFlight, status: st}
	f := promFactory{m.reg}
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	m.published = f.counterVec("outboxrelay_events_published_total", "Records Kafka acknowledged (acks=all), by topic.", "topic")
	m.publishedBytes = f.counterVec("outboxrelay_published_bytes_total", "Key and value bytes of the records Kafka acknowledged, by topic.", "topic")
	m.commitToAck = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "outboxrelay_commit_to_ack_seconds",
		Help:    "Time from a row's commit in PostgreSQL to Kafka's acknowledgement of its record (snapshot rows excluded).",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 14), // 5 ms .. 41 s
	})
	m.reg.MustRegister(m.commitToAck)
	m.produceErrors = f.counterVec("outboxrelay_kafka_produce_errors_total", "Failed produce requests, by error kind and whether the batch is retried.", "kind", "retrying")
	m.reconnects = f.counter("outboxrelay_reconnects_total", "Replication sessions lost and retried.")
	m.skipped = f.counterVec("outboxrelay_rows_skipped_total", "Rows and messages deliberately not published, by reason.", "reason")
	m.skippedBy = make(map[string]prometheus.Counter, len(skipReasons))
	for _, r := range skipReasons {
		m.skippedBy[r] = m.skipped.WithLabelValues(r)
	}
	m.deadLettered = f.counter("outboxrelay_dead_lettered_total", "Poison rows sent to the dead-letter topic or skipped (errors.tolerance=all).")
	m.snapshotRows = f.gauge("outboxrelay_snapshot_rows", "Rows emitted by the current or last initial snapshot.")
	m.snapshotActive = f.gauge("outboxrelay_snapshot_running", "1 while an initial snapshot runs.")
	m.janitorDeleted = f.counter("outboxrelay_janitor_deleted_rows_total", "Outbox rows deleted by the clean-up janitor (outbox.retention.ms).")
	m.pollStuck = f.gauge("outboxrelay_poll_stuck_rows", "Poll mode: outbox rows undispatched for longer than outbox.poll.stuck.after.ms.")
	m.replayLagBytes = f.gauge("outboxrelay_standby_replay_lag_bytes", "Decoding on a hot standby: WAL it received and has not replayed (pg_last_wal_receive_lsn() - pg_last_wal_replay_lsn()), sampled every second; 0 on a primary.")
	m.replayLagSeconds = f.gauge("outboxrelay_standby_replay_lag_seconds", "Decoding on a hot standby: now - pg_last_xact_replay_timestamp() while received WAL waits for replay, else 0; sampled every second; 0 on a primary.")
	m.slotInvalidated = f.gauge("outboxrelay_standby_slot_invalidated", "Decoding on a hot standby: 1 when the server invalidated the relay's slot there (invalidation_reason on 17+, conflicting on 16); the relay stops right after.")
	m.stateGauge = f.gaugeVec("outboxrelay_state", "1 for the relay's current state, 0 for the others.", "state")
	for _, s := range capture.States() {
		m.stateGauge.WithLabelValues(string(s))
	}

	f.gaugeFunc("outboxrelay_confirmed_lsn", "LSN confirmed to PostgreSQL (everything up to it is in Kafka), as a number.", func() float64 { return float64(m.confirmed.Load()) })
	f.gaugeFunc("outboxrelay_received_lsn", "The server's WAL end as last reported on the replication connection, as a number.", func() float64 { return float64(m.received.Load()) })
	f.gaugeFunc("outboxrelay_replication_lag_bytes", "Server WAL end minus confirmed LSN.", func() float64 { return float64(m.lagBytes()) })
	f.gaugeFunc("outboxrelay_replication_lag_seconds", "Now minus the commit time of the oldest transaction received and not yet confirmed; 0 when everything received is confirmed.", func() float64 { return m.lagSeconds(time.Now()) })
	f.gaugeFunc("outboxrelay_records_in_flight", "Records handed to Kafka and not yet acknowledged.", func() float64 { n, _ := m.inFlightNow(); return float64(n) })
	f.gaugeFunc("outboxrelay_bytes_in_flight", "Bytes of the records handed to Kafka and not yet acknowledged.", func() float64 { _, b := m.inFlightNow(); return float64(b) })
	f.gaugeFunc("outboxrelay_ready", "1 when /readyz answers 200.", func() float64 {
		if ok, _ := m.status.ready(time.Now()); ok {
			return 1
		}
		return 0
	})
	return m
}

// promFactory registers each collector as it builds it.
type promFactory struct{ reg *prometheus.Registry }

func (f promFactory) counter(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	f.reg.MustRegister(c)
	return c
}

func (f promFactory) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	f.reg.MustRegister(c)
	return c
}

func (f promFactory) gauge(name, help string) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	f.reg.MustRegister(g)
	return g
}

func (f promFactory) gaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	f.reg.MustRegister(g)
	return g
}

func (f promFactory) gaugeFunc(name, help string, fn func() float64) {
	f.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, fn))
}

// Published implements replication.Observer.
func (m *metrics) Published(topic string, bytes int, commitTime time.Time) {
	tc := m.topic(topic)
	tc.events.Inc()
	tc.bytes.Add(float64(bytes))
	m.events.Add(1)
	if !commitTime.IsZero() {
		now := time.Now()
		m.commitToAck.Observe(now.Sub(commitTime).Seconds())
	}
}

// PublishedTraced implements relay.TraceObserver: Published, the
// commit-to-ack time with the record's trace id as its exemplar (shown in
// the OpenMetrics exposition, which /metrics serves to a scraper that asks
// for it).
func (m *metrics) PublishedTraced(topic string, bytes int, commitTime time.Time, traceID string) {
	if commitTime.IsZero() {
		m.Published(topic, bytes, commitTime)
		return
	}
	tc := m.topic(topic)
	tc.events.Inc()
	tc.bytes.Add(float64(bytes))
	m.events.Add(1)
	m.commitToAck.(prometheus.ExemplarObserver).ObserveWithExemplar(time.Since(commitTime).Seconds(), prometheus.Labels{"trace_id": traceID})
}

// topic returns the topic's counters, creating them on first use only.
func (m *metrics) topic(topic string) *topicCounters {
	if v, ok := m.topics.Load(topic); ok {
		return v.(*topicCounters)
	}
	tc := &topicCounters{events: m.published.WithLabelValues(topic), bytes: m.publishedBytes.WithLabelValues(topic)}
	v, _ := m.topics.LoadOrStore(topic, tc)
	return v.(*topicCounters)
}

// Skipped implements replication.Observer.
// DeadLettered counts a row the poison policy dealt with.
func (m *metrics) DeadLettered() { m.deadLettered.Inc() }

func (m *metrics) Skipped(reason string) {
	if c, ok := m.skippedBy[reason]; ok {
		c.Inc()
		return
	}
	m.skipped.WithLabelValues(reason).Inc()
}

// Received implements replication.Observer.
func (m *metrics) Received(confirmed, serverWALEnd capture.LSN) {
	m.received.Store(uint64(serverWALEnd))
	storeMax(&m.confirmed, uint64(confirmed))
}

// Pending implements replication.Observer.
func (m *metrics) Pending(oldest time.Time) {
	if oldest.IsZero() {
		m.oldest.Store(0)
		return
	}
	m.oldest.Store(oldest.UnixNano())
}

// Confirmed implements replication.Observer.
func (m *metrics) Confirmed(lsn capture.LSN) { storeMax(&m.confirmed, uint64(lsn)) }

// storeMax keeps the highest LSN: a new session starts from what the server
// knows, which may be behind what this process confirmed.
func storeMax(a *atomic.Uint64, v uint64) {
	for {
		old := a.Load()
		if v <= old || a.CompareAndSwap(old, v) {
			return
		}
	}
}

// State implements the observers' State: it records s in the status and
// the outboxrelay_state gauge. It does not log: the source and the relay
// log each state change once, with its details.
func (m *metrics) State(s capture.State) {
	prev := m.status.setState(s)
	if prev == s {
		return
	}
	if s == capture.StateRetrying {
		m.reconnects.Inc()
	}
	if prev != "" {
		m.stateGauge.WithLabelValues(string(prev)).Set(0)
	}
	m.stateGauge.WithLabelValues(string(s)).Set(1)
	m.snapshotActive.Set(boolFloat(s == capture.StateSnapshot))
}

// Standby implements replication.Observer.
func (m *metrics) Standby(r replication.StandbyReplay) {
	m.replayLagBytes.Set(float64(r.LagBytes))
	m.replayLagSeconds.Set(r.LagSeconds)
	m.slotInvalidated.Set(boolFloat(r.SlotInvalidated != ""))
}

// SnapshotProgress implements replication.Observer.
func (m *metrics) SnapshotProgress(rows int64, done bool) {
	m.snapshotRows.Set(float64(rows))
	if done {
		m.snapshotActive.Set(0)
	}
}

// Produced implements sink.Observer: any acknowledged batch proves Kafka
// answers.
func (m *metrics) Produced(records, bytes int) { m.status.kafkaAnswered(true) }

// ProduceFailed implements sink.Observer.
func (m *metrics) ProduceFailed(kind string, retrying bool) {
	m.status.kafkaAnswered(false)
	r := "false"
	if retrying {
		r = "true"
	}
	m.produceErrors.WithLabelValues(kind, r).Inc()
}

func (m *metrics) lagBytes() uint64 {
	r, c := m.received.Load(), m.confirmed.Load()
	if r <= c {
		return 0
	}
	return r - c
}

// lagSeconds is now minus the commit time of the oldest transaction the
// relay has received and not confirmed (being decoded or waiting for
// Kafka): 0 when everything received is confirmed, whatever other tables
// write meanwhile, and growing while Kafka is down.
func (m *metrics) lagSeconds(now time.Time) float64 {
	oldest := m.oldest.Load()
	if oldest == 0 {
		return 0
	}
	return max(0, now.Sub(time.Unix(0, oldest)).Seconds())
}

func (m *metrics) inFlightNow() (int, int64) {
	if m.inFlight == nil {
		return 0, 0
	}
	return m.inFlight()
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
