package relay_test

import (
	"context"
	"testing"
	"time"

	"github.com/outboxrelay/outboxrelay/router"
)

// BenchmarkEventRoute measures the relay's share of one row before the
// sink, without a broker: binding the source's row (a captured pgoutput
// Insert, decoded and bound as BenchmarkPipeline does) into the router's
// event, and routing it. It is the path "one shape of a row" (issue 26)
// took a copy of every column out of.
func BenchmarkEventRoute(b *testing.B) {
	rt, err := router.New(mustRouterConfig(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	st := newReplayStream(loadPipelineFrames(b), 1, 1)
	if err := st.Start(context.Background(), nil); err != nil {
		b.Fatal(err)
	}
	if _, err := st.decode(st.f.inserts[0]); err != nil {
		b.Fatal(err)
	}
	var ev router.Event // as session.event binds it: the row, by pointer
	var recs []router.Record
	b.ReportAllocs()
	cpu := cpuTime()
	for b.Loop() {
		ev.Row, ev.ProcessedAt = &st.row, time.Now()
		if recs, err = rt.Route(&ev, recs[:0]); err != nil || len(recs) != 1 {
			b.Fatalf("Route: %d records, %v", len(recs), err)
		}
	}
	b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
}
