package main

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPercentileNearestRank(t *testing.T) {
	sorted := []int64{10, 20, 30, 40, 50, 60, 70, 80, 90, 100}
	for _, c := range []struct {
		p    float64
		want int64
	}{{50, 50}, {95, 100}, {99, 100}, {10, 10}, {11, 20}, {100, 100}, {0.1, 10}} {
		if got := percentile(sorted, c.p); got != c.want {
			t.Errorf("p%v = %d, want %d", c.p, got, c.want)
		}
	}
	if got := percentile(nil, 50); got != 0 {
		t.Errorf("p50 of nothing = %d, want 0", got)
	}
	one := []int64{7}
	if percentile(one, 1) != 7 || percentile(one, 99) != 7 {
		t.Errorf("a single sample is every percentile")
	}
}

func TestSummarizeMilliseconds(t *testing.T) {
	us := make([]int64, 0, 1000)
	for i := 1000; i >= 1; i-- { // unsorted on purpose
		us = append(us, int64(i)*1000) // 1 … 1000 ms
	}
	l := summarize(us)
	if l.Samples != 1000 || l.P50 != 500 || l.P95 != 950 || l.P99 != 990 || l.Max != 1000 || l.Mean != 500.5 {
		t.Errorf("summary %+v", l)
	}
	if (summarize(nil) != Latency{}) {
		t.Errorf("empty summary not zero")
	}
}

func rc(seq, agg, aseq int64) Receipt {
	return Receipt{Event: Event{Seq: seq, Agg: agg, ASeq: aseq}, At: time.UnixMicro(1_000_000 + seq*1000), InsertedUs: 1_000_000}
}

func TestTrackerAccounting(t *testing.T) {
	tr := NewTracker(6, 2, 0)
	for _, r := range []Receipt{
		rc(0, 0, 0), rc(1, 1, 0), rc(2, 0, 1),
		rc(2, 0, 1), // duplicate
		rc(4, 0, 3), // skips aseq 2: fine, order only
		rc(3, 0, 2), // below 3 already delivered: out of order
		{Foreign: true},
		rc(99, 0, 0), // seq out of range
		rc(5, 7, 0),  // aggregate out of range
	} {
		tr.Add(r)
	}
	if tr.Unique != 5 || tr.Duplicates != 1 || tr.OutOfOrder != 1 || tr.Foreign != 1 || tr.Invalid != 2 {
		t.Fatalf("unique %d duplicates %d out_of_order %d foreign %d invalid %d", tr.Unique, tr.Duplicates, tr.OutOfOrder, tr.Foreign, tr.Invalid)
	}
	if tr.Done() || tr.Missing() != 1 {
		t.Fatalf("done %v missing %d, want false 1", tr.Done(), tr.Missing())
	}
	if got := tr.MissingSample(10); len(got) != 1 || got[0] != 5 {
		t.Fatalf("missing sample %v, want [5]", got)
	}
	tr.Add(rc(5, 1, 1))
	if !tr.Done() || tr.Missing() != 0 {
		t.Fatalf("all six arrived but done %v missing %d", tr.Done(), tr.Missing())
	}
	// Latency: receipt at 1 s + seq ms, inserted at 1 s: seq ms each.
	l := tr.Latency()
	if l.Samples != 6 || l.Max != 5 || l.P50 != 2 {
		t.Fatalf("latency %+v", l)
	}
	if !tr.First.Equal(time.UnixMicro(1_000_000)) || !tr.Last.Equal(time.UnixMicro(1_005_000)) {
		t.Fatalf("first %v last %v", tr.First, tr.Last)
	}
}

// A redelivered older event (a relay restarting from an earlier LSN) is a
// duplicate, not also out of order.
func TestTrackerRedeliveryIsDuplicateOnly(t *testing.T) {
	tr := NewTracker(3, 1, 0)
	for _, r := range []Receipt{rc(0, 0, 0), rc(1, 0, 1), rc(0, 0, 0), rc(1, 0, 1), rc(2, 0, 2)} {
		tr.Add(r)
	}
	if tr.Duplicates != 2 || tr.OutOfOrder != 0 || !tr.Done() {
		t.Fatalf("duplicates %d out_of_order %d done %v", tr.Duplicates, tr.OutOfOrder, tr.Done())
	}
}

func TestTrackerWarmupLeftOutOfLatency(t *testing.T) {
	tr := NewTracker(10, 1, 4)
	for s := int64(0); s < 10; s++ {
		tr.Add(rc(s, 0, s))
	}
	if l := tr.Latency(); l.Samples != 6 || l.P50 != 6 {
		t.Fatalf("latency %+v, want 6 samples from seq 4 on", l)
	}
}

func TestPacing(t *testing.T) {
	if got := dueAt(1000, 1, 1000); got != time.Second {
		t.Errorf("tx 1000 at 1000/s, 1 row: %v, want 1s", got)
	}
	if got := dueAt(10, 100, 1000); got != time.Second {
		t.Errorf("tx 10 at 1000/s, 100 rows: %v, want 1s", got)
	}
	if got := dueAt(1, 1, 5000); got != 200*time.Microsecond {
		t.Errorf("tx 1 at 5000/s: %v, want 200µs", got)
	}
	if got := steadyEvents(1000, 60*time.Second); got != 60000 {
		t.Errorf("1000/s for 60 s = %d events", got)
	}
	if got := steadyEvents(333.3, 3*time.Second); got != 1000 {
		t.Errorf("333.3/s for 3 s = %d events, want 1000 (rounded)", got)
	}
	if got := warmupEvents(1000, 2*time.Second, 500); got != 500 {
		t.Errorf("warm-up longer than the run: %d, want all 500", got)
	}
	// The schedule is absolute: the last transaction is due at
	// (txs-1)*rows/rate whatever happened before.
	w := Workload{Events: 60000, RowsPerTx: 7}
	last := dueAt(w.Txs()-1, 7, 1000)
	if last < 59*time.Second || last > 60*time.Second {
		t.Errorf("last of %d txs due at %v", w.Txs(), last)
	}
}

func TestWorkloadNumbering(t *testing.T) {
	for _, w := range []Workload{
		{Events: 1000, RowsPerTx: 1, Workers: 4, Aggregates: 10},
		{Events: 1001, RowsPerTx: 100, Workers: 3, Aggregates: 7},
		{Events: 50, RowsPerTx: 3, Workers: 8, Aggregates: 5}, // clamped to 5 workers
	} {
		w.Types = []string{"a", "b"}
		if err := w.Validate(); err != nil {
			t.Fatal(err)
		}
		if w.Workers > w.Aggregates {
			t.Fatalf("workers %d not clamped to aggregates %d", w.Workers, w.Aggregates)
		}
		// Simulate commit order: each worker commits its transactions in
		// order, workers interleave arbitrarily (here: round robin
		// backwards). Per aggregate, ASeq must count 0, 1, 2, … and each
		// aggregate must belong to one worker.
		next := make(map[int64]int64)
		owner := make(map[int64]int64)
		var count int64
		for round := int64(0); round*int64(w.Workers) < w.Txs(); round++ {
			for wk := int64(w.Workers) - 1; wk >= 0; wk-- {
				tx := round*int64(w.Workers) + wk
				if tx >= w.Txs() {
					continue
				}
				for s := tx * int64(w.RowsPerTx); s < min(w.Events, (tx+1)*int64(w.RowsPerTx)); s++ {
					e := w.EventAt(s)
					count++
					if e.Seq != s || e.Agg < 0 || e.Agg >= int64(w.Aggregates) {
						t.Fatalf("%+v: event %d = %+v", w, s, e)
					}
					if o, ok := owner[e.Agg]; ok && o != wk {
						t.Fatalf("aggregate %d written by workers %d and %d", e.Agg, o, wk)
					}
					owner[e.Agg] = wk
					if e.ASeq != next[e.Agg] {
						t.Fatalf("%+v: aggregate %d got aseq %d, want %d", w, e.Agg, e.ASeq, next[e.Agg])
					}
					next[e.Agg]++
				}
			}
		}
		if count != w.Events || len(owner) != w.Aggregates {
			t.Fatalf("%+v: %d events over %d aggregates", w, count, len(owner))
		}
	}
}

func TestTxSQLShape(t *testing.T) {
	w := Workload{Run: "r1", Events: 250, RowsPerTx: 100, Workers: 2, Aggregates: 4, Types: []string{"orders", "payments"}, EventType: "E", PadBytes: 10}
	if err := w.Validate(); err != nil {
		t.Fatal(err)
	}
	sql := w.TxSQL("public.t", 2) // the last, partial transaction: 50 rows
	for _, want := range []string{"INSERT INTO public.t ", "generate_series(0, 49)", "'orders','payments'", "'run', 'r1'", "repeat('x', 10)", "200 + j AS s", "100 + j AS l"} {
		if !strings.Contains(sql, want) {
			t.Errorf("TxSQL lacks %q:\n%s", want, sql)
		}
	}
}

func TestParseRecord(t *testing.T) {
	for name, c := range map[string]struct {
		value   string
		foreign bool
		want    Event
		ts      int64
	}{
		"expanded":        {value: `{"run":"r1","seq":5,"a":3,"aseq":2,"ts":1700000000000000,"pad":"xx"}`, want: Event{5, 3, 2}, ts: 1700000000000000},
		"string payload":  {value: `"{\"run\": \"r1\", \"seq\": 0, \"a\": 0, \"aseq\": 0, \"ts\": 1}"`, want: Event{0, 0, 0}, ts: 1},
		"other run":       {value: `{"run":"r2","seq":5,"a":3,"aseq":2,"ts":1}`, foreign: true},
		"no seq":          {value: `{"run":"r1"}`, foreign: true},
		"not json":        {value: `hello`, foreign: true},
		"tombstone":       {value: ``, foreign: true},
		"broken string":   {value: `"{\"run`, foreign: true},
		"example payload": {value: `{"orderId":9191642889,"payableAmount":199.00}`, foreign: true},
	} {
		got := parseRecord([]byte(c.value), "r1")
		if got.Foreign != c.foreign || (!c.foreign && (got.Event != c.want || got.InsertedUs != c.ts)) {
			t.Errorf("%s: %+v", name, got)
		}
	}
}

func TestFlagsValidate(t *testing.T) {
	base := []string{"--pg-url", "postgres://x", "--kafka-brokers", "k:9092"}
	for name, c := range map[string]struct {
		mode string
		args []string
		want string // substring of the error; "" = valid
	}{
		"backlog defaults":       {"backlog", nil, ""},
		"relay without slot":     {"backlog", []string{"--relay-cmd", "x"}, "--relay-cmd needs --slot"},
		"bad table":              {"backlog", []string{"--table", "x; drop"}, "--table"},
		"recvlogical no pub":     {"backlog", []string{"--recvlogical-slot", "r"}, "needs --publication"},
		"same slots":             {"backlog", []string{"--slot", "s", "--recvlogical-slot", "s", "--publication", "p"}, "must differ"},
		"steady zero rate":       {"steady", []string{"--rate", "0"}, "--rate"},
		"recvlogical needs slot": {"recvlogical", nil, "--slot is required"},
		"quote in type":          {"steady", []string{"--aggregate-types", "a'b"}, "quote"},
	} {
		args := append([]string{}, base...)
		if c.mode == "recvlogical" {
			args = args[:2] // no Kafka
		}
		_, err := parseFlags(c.mode, append(args, c.args...), io.Discard)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want one with %q", name, err, c.want)
		}
	}
	o, err := parseFlags("steady", append(base, "--rate", "1000", "--duration", "60s"), io.Discard)
	if err != nil || o.events != 60000 || o.topics[0] != "bench" {
		t.Fatalf("steady 1000/s 60 s: %v events %d topics %v", err, o.events, o.topics)
	}
}

func TestStatPgrp(t *testing.T) {
	for stat, want := range map[string]int{
		"123 (outboxrelay) S 1 123 123 0 -1": 123,
		"77 (a b) c) R 5 66 66 0":            66,
		"88 (x":                              -1,
		"9 (sh) S 1":                         -1,
	} {
		if got := statPgrp([]byte(stat)); got != want {
			t.Errorf("%q: %d, want %d", stat, got, want)
		}
	}
}

// Regression: rusage's ru_maxrss of a child started by Go includes this
// process's RSS high-water mark, so peak RSS must come from the child's
// own VmHWM.
func TestChildPeakRSSIsTheChildsOwn(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc")
	}
	ballast := make([]byte, 256<<20)
	for i := 0; i < len(ballast); i += 4096 { // touch every page
		ballast[i] = 1
	}
	c, err := startChild("sleep 1", filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	u, err := c.stop(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if u.PeakRSSMiB <= 0 || u.PeakRSSMiB > 64 {
		t.Fatalf("sleep's peak RSS %v MiB: not its own (this process holds %d MiB)", u.PeakRSSMiB, len(ballast)>>20)
	}
}

func TestTimelinePerSecond(t *testing.T) {
	tr := NewTracker(6, 1, 1)
	base := time.Unix(100, 0)
	at := func(seq int64, d time.Duration, latMs int64) Receipt {
		return Receipt{Event: Event{Seq: seq, ASeq: seq}, At: base.Add(d), InsertedUs: base.Add(d).UnixMicro() - latMs*1000}
	}
	for _, r := range []Receipt{
		at(0, 0, 100), // warm-up: counted, no latency sample
		at(1, 500*time.Millisecond, 2),
		at(2, 2100*time.Millisecond, 4), // second 1 is empty
		at(3, 2200*time.Millisecond, 8),
		at(4, 2050*time.Millisecond, 6), // a hair late: stays in second 2
		at(4, 2300*time.Millisecond, 1), // duplicate: not counted
		at(5, 3*time.Second, 3),
	} {
		tr.Add(r)
	}
	got := tr.Timeline()
	want := []Point{
		{Second: 0, Events: 2, Samples: 1, P50: 2, P99: 2, Max: 2},
		{Second: 1},
		{Second: 2, Events: 3, Samples: 3, P50: 6, P99: 8, Max: 8},
		{Second: 3, Events: 1, Samples: 1, P50: 3, P99: 3, Max: 3},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("timeline\n got %+v\nwant %+v", got, want)
	}
	if l := tr.Latency(); l.Samples != 5 || l.Max != 8 {
		t.Fatalf("latency %+v", l)
	}
	if tr.Timeline()[2] != want[2] {
		t.Fatalf("Latency must not reorder the samples the timeline reads")
	}
}

// pg_recvlogical read the stream in plain text (the bed's DSN says
// sslmode=disable) while both relays read it over TLS (the connector's
// default sslmode, prefer): its CPU per event, the floor, left TLS out.
func TestRecvlogicalSSLModeAsTheRelays(t *testing.T) {
	cases := []struct{ dsn, mode, want string }{
		{"postgres://u:p@127.0.0.1:5432/db?sslmode=disable", "prefer", "postgres://u:p@127.0.0.1:5432/db?sslmode=prefer"},
		{"postgresql://u@h/db", "require", "postgresql://u@h/db?sslmode=require"},
		{"postgres://u@h/db?application_name=x&sslmode=disable", "prefer", "postgres://u@h/db?application_name=x&sslmode=prefer"},
		{"postgres://u@h1:5432,h2:5432/db?options=-c%20x%3Dy", "prefer", "postgres://u@h1:5432,h2:5432/db?options=-c%20x%3Dy&sslmode=prefer"},
		{"host=h dbname=db sslmode=disable", "prefer", "host=h dbname=db sslmode=disable sslmode=prefer"},
		{"postgres://u@h/db?sslmode=disable", "", "postgres://u@h/db?sslmode=disable"},
	}
	for _, c := range cases {
		if got := withSSLMode(c.dsn, c.mode); got != c.want {
			t.Errorf("withSSLMode(%q, %q) = %q, want %q", c.dsn, c.mode, got, c.want)
		}
	}
}
