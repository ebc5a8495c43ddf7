package main

import (
	"math"
	"slices"
	"time"
)

// Tracker accounts for every event a consumer received. It is owned by one
// goroutine. Memory is one bit per expected event, one int64 per aggregate
// and one latency sample per counted event; messages are not kept.
type Tracker struct {
	expected    int64
	seen        []uint64 // bitset over Seq
	lastASeq    []int64  // highest per-aggregate sequence delivered, -1 before the first
	latencySkip int64    // events with Seq below this are left out of the latency samples (warm-up)

	Unique     int64 // distinct events received
	Duplicates int64 // receipts of an event already received
	OutOfOrder int64 // first receipts whose ASeq is below one already delivered for the aggregate
	Foreign    int64 // records that are not events of this run (other runs, unparsable)
	Invalid    int64 // events of this run with Seq or aggregate out of range
	First      time.Time
	Last       time.Time // receipt of the last new event
	latencies  []int64   // microseconds, in receipt order
	seconds    []second  // per second since First
}

// second is one second of the timeline: new events received in it and
// where its latency samples start in latencies (they are contiguous,
// since samples are appended in receipt order).
type second struct {
	events  int64
	latFrom int
}

// NewTracker expects events 0 … expected-1 over aggregates 0 … aggregates-1.
func NewTracker(expected int64, aggregates int, latencySkip int64) *Tracker {
	last := make([]int64, aggregates)
	for i := range last {
		last[i] = -1
	}
	return &Tracker{
		expected:    expected,
		seen:        make([]uint64, (expected+63)/64),
		lastASeq:    last,
		latencySkip: latencySkip,
		latencies:   make([]int64, 0, min(expected, 1<<20)),
	}
}

// Receipt is one delivered event as the consumer parsed it.
type Receipt struct {
	Event
	InsertedUs int64     // payload ts: clock_timestamp() at insert, µs since the epoch
	At         time.Time // when the consumer returned the record
	Foreign    bool      // not an event of this run
}

// Add counts one receipt.
func (t *Tracker) Add(r Receipt) {
	if r.Foreign {
		t.Foreign++
		return
	}
	if r.Seq < 0 || r.Seq >= t.expected || r.Agg < 0 || r.Agg >= int64(len(t.lastASeq)) {
		t.Invalid++
		return
	}
	if t.First.IsZero() {
		t.First = r.At
	}
	word, bit := r.Seq/64, uint64(1)<<(r.Seq%64)
	if t.seen[word]&bit != 0 {
		t.Duplicates++
		return
	}
	t.seen[word] |= bit
	t.Unique++
	t.Last = r.At
	// Receipts from several partitions may arrive a hair out of time
	// order; a late one counts in the current second.
	sec := max(int(r.At.Sub(t.First)/time.Second), len(t.seconds)-1)
	for len(t.seconds) <= sec {
		t.seconds = append(t.seconds, second{latFrom: len(t.latencies)})
	}
	t.seconds[sec].events++
	if r.ASeq < t.lastASeq[r.Agg] {
		t.OutOfOrder++
	} else {
		t.lastASeq[r.Agg] = r.ASeq
	}
	if r.Seq >= t.latencySkip {
		t.latencies = append(t.latencies, r.At.UnixMicro()-r.InsertedUs)
	}
}

// Done reports whether every expected event arrived.
func (t *Tracker) Done() bool { return t.Unique == t.expected }

// Missing is the number of expected events not received (yet).
func (t *Tracker) Missing() int64 { return t.expected - t.Unique }

// MissingSample returns up to n sequence numbers never received, for the
// report.
func (t *Tracker) MissingSample(n int) []int64 {
	var out []int64
	for s := int64(0); s < t.expected && len(out) < n; s++ {
		if t.seen[s/64]&(1<<(s%64)) == 0 {
			out = append(out, s)
		}
	}
	return out
}

// Latency summarises the samples in milliseconds.
type Latency struct {
	Samples int     `json:"samples"`
	P50     float64 `json:"p50"`
	P95     float64 `json:"p95"`
	P99     float64 `json:"p99"`
	Max     float64 `json:"max"`
	Mean    float64 `json:"mean"`
}

// Latency summarises all samples.
func (t *Tracker) Latency() Latency {
	return summarize(slices.Clone(t.latencies))
}

// Point is one second of the timeline, for charts of throughput and
// latency over a run.
type Point struct {
	Second  int     `json:"s"` // since the first event received
	Events  int64   `json:"events"`
	Samples int     `json:"samples"`
	P50     float64 `json:"p50_ms"`
	P99     float64 `json:"p99_ms"`
	Max     float64 `json:"max_ms"`
}

// Timeline is events received and latency percentiles per second.
func (t *Tracker) Timeline() []Point {
	out := make([]Point, 0, len(t.seconds))
	for i, sec := range t.seconds {
		to := len(t.latencies)
		if i+1 < len(t.seconds) {
			to = t.seconds[i+1].latFrom
		}
		l := summarize(slices.Clone(t.latencies[sec.latFrom:to]))
		out = append(out, Point{Second: i, Events: sec.events, Samples: l.Samples, P50: l.P50, P99: l.P99, Max: l.Max})
	}
	return out
}

// summarize sorts us in place and returns its percentiles in milliseconds.
func summarize(us []int64) Latency {
	if len(us) == 0 {
		return Latency{}
	}
	slices.Sort(us)
	var sum float64
	for _, v := range us {
		sum += float64(v)
	}
	ms := func(v int64) float64 { return round3(float64(v) / 1000) }
	return Latency{
		Samples: len(us),
		P50:     ms(percentile(us, 50)),
		P95:     ms(percentile(us, 95)),
		P99:     ms(percentile(us, 99)),
		Max:     ms(us[len(us)-1]),
		Mean:    round3(sum / float64(len(us)) / 1000),
	}
}

// percentile is the nearest-rank percentile of sorted (p in (0, 100]):
// the smallest sample with at least p% of the samples at or below it.
func percentile(sorted []int64, p float64) int64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = max(1, min(rank, len(sorted)))
	return sorted[rank-1]
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }
