package relay_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/outboxrelay/outboxrelay/capture"
	"github.com/outboxrelay/outboxrelay/relay"
	"github.com/outboxrelay/outboxrelay/replication"
	"github.com/outboxrelay/outboxrelay/router"
	"github.com/outboxrelay/outboxrelay/sink"
)

// BenchmarkPipeline measures the whole per-event path without a bed:
// captured pgoutput frames (testdata/pgoutput: a Relation, then
// transactions of 1 or 100 Inserts) are decoded with replication.Decode,
// bound into capture events, routed by the EventRouter, sent through the
// real relay session (budget, checkpoint) and the at-least-once delivery
// (sink.AtLeastOnce on sink.Producer, recording no position), encoded into
// produce requests, acknowledged by an in-process kfake broker, and
// confirmed by the checkpoint. One op is one event (one outbox row).
// The rows-per-tx runs go as fast as the path allows (a backlog); the
// steady run paces one-row transactions at 1,000/s, where what an event
// costs is mostly the fixed cost of waking up for it (timers, goroutine
// hand-offs, small produce requests).
//
// cpu-ns/event is the process's user+system CPU per event, the figure
// scripts/compare measures on the bed; it includes kfake's share (the
// broker runs in this process), as allocs/op do.
func BenchmarkPipeline(b *testing.B) {
	for _, rows := range []int{1, 100} {
		b.Run(fmt.Sprintf("rows-per-tx=%d", rows), func(b *testing.B) { benchPipeline(b, rows, 0) })
	}
	b.Run("steady-1000/s", func(b *testing.B) { benchPipeline(b, 1, time.Millisecond) })
	// Tracing on, every event sampled (tracing.with.context.field.only
	// =false: the frames have no span context), spans handed to the SDK's
	// batch processor and an exporter that drops them: the relay's and
	// the SDK's cost per event, without the network's.
	b.Run("rows-per-tx=100/tracing=on", func(b *testing.B) {
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discardExporter{}))
		defer func() { _ = tp.Shutdown(context.Background()) }()
		benchPipeline(b, 100, 0, relay.Tracing{Tracer: tp.Tracer("bench"), WithoutContext: true})
	})
}

// discardExporter drops what it is given.
type discardExporter struct{}

func (discardExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardExporter) Shutdown(context.Context) error                             { return nil }

func benchPipeline(b *testing.B, rowsPerTx int, every time.Duration, tracing ...relay.Tracing) {
	frames := loadPipelineFrames(b)
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "p.orders", "p.payments"))
	if err != nil {
		b.Fatal(err)
	}
	defer cluster.Close()
	p, err := sink.NewProducer(sink.Config{Brokers: cluster.ListenAddrs()}, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	rt, err := router.New(mustRouterConfig(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	st := newReplayStream(frames, rowsPerTx, b.N)
	st.every = every
	opt := relay.Options{Source: &replaySource{st: st}, Router: rt, Delivery: sink.NewAtLeastOnce(p, nil),
		Log: slog.New(slog.DiscardHandler), MaxRetries: 0}
	if len(tracing) > 0 {
		opt.Tracing = tracing[0]
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0, start := cpuTime(), time.Now()
	st.start = start
	if err := relay.Run(context.Background(), opt); err != nil {
		b.Fatal(err)
	}
	elapsed, cpu := time.Since(start), cpuTime()-cpu0
	b.StopTimer()
	if st.confirmed() != st.last {
		b.Fatalf("confirmed %s, want the last end LSN %s", st.confirmed(), st.last)
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/event")
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
}

func mustRouterConfig(b *testing.B) router.Config {
	cfg, _, err := router.ParseConfig(map[string]string{"transforms": "outbox", "transforms.outbox.type": router.EventRouterClass,
		"topic.prefix": "p", "transforms.outbox.route.topic.replacement": "p.${routedByValue}"})
	if err != nil {
		b.Fatal(err)
	}
	return cfg
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// pipelineFrames are captured frames of one table (cap.outbox): its
// Relation message, a Begin, two Inserts (orders, payments) and a Commit.
type pipelineFrames struct {
	relation, begin, commit []byte
	inserts                 [][]byte
}

func loadPipelineFrames(b *testing.B) pipelineFrames {
	read := func(name string) []byte {
		data, err := os.ReadFile(filepath.Join("..", "testdata", "pgoutput", name))
		if err != nil {
			b.Fatal(err)
		}
		return data
	}
	return pipelineFrames{relation: read("003-R.bin"), begin: read("006-B.bin"), commit: read("009-C.bin"),
		inserts: [][]byte{read("004-I.bin"), read("007-I.bin")}}
}

type replaySource struct{ st *replayStream }

func (s *replaySource) Acquire(context.Context) error { return nil }
func (s *replaySource) Open(context.Context, capture.Known) (capture.Stream, error) {
	return s.st, nil
}
func (s *replaySource) Retryable(error) bool                { return false }
func (s *replaySource) Holds(context.Context) (bool, error) { return true, nil }
func (s *replaySource) Close()                              {}

// replayStream yields events transactions of rowsPerTx Inserts, events in
// all, from the captured frames, each transaction with LSNs of its own
// (patched into copies of the Begin and Commit frames), one transaction
// per every when every is set; it then waits
// until the checkpoint confirmed the last one, and ends. Decoding and
// binding follow replication's stream: Decode, Relations, a column per
// tuple column aliasing the frame.
type replayStream struct {
	f         pipelineFrames
	rowsPerTx int
	left      int // rows still to yield
	inTx      int // rows yielded of the open transaction; -1 between transactions
	lsn       capture.LSN
	last      capture.LSN
	p         capture.Progress
	rels      *replication.Relations
	msg       replication.Message
	ev        capture.Event
	row       capture.Row
	begin     []byte
	commit    []byte
	k         int
	every     time.Duration // pace of transactions; 0: none
	start     time.Time
	txs       int
}

func newReplayStream(f pipelineFrames, rowsPerTx, events int) *replayStream {
	return &replayStream{f: f, rowsPerTx: rowsPerTx, left: events, inTx: -1, lsn: 0x1000000,
		rels: replication.NewRelations(), begin: append([]byte(nil), f.begin...), commit: append([]byte(nil), f.commit...)}
}

func (s *replayStream) From() capture.LSN { return 0x1000000 }
func (s *replayStream) Start(_ context.Context, p capture.Progress) error {
	s.p = p
	if err := replication.Decode(s.f.relation, &s.msg); err != nil {
		return err
	}
	s.rels.Put(&s.msg.Relation)
	return nil
}

func (s *replayStream) confirmed() capture.LSN { return s.p.Confirmed() }

func (s *replayStream) Next(ctx context.Context) (*capture.Event, error) {
	switch {
	case s.inTx < 0 && s.left == 0:
		return nil, s.waitConfirmed(ctx)
	case s.inTx < 0:
		if s.every > 0 {
			s.txs++
			time.Sleep(time.Until(s.start.Add(time.Duration(s.txs) * s.every)))
		}
		s.lsn += 0x1000
		binary.BigEndian.PutUint64(s.begin[1:], uint64(s.lsn)) // final LSN
		s.inTx = 0
		return s.decode(s.begin)
	case s.inTx == s.rowsPerTx || s.left == 0:
		binary.BigEndian.PutUint64(s.commit[2:], uint64(s.lsn))       // commit LSN
		binary.BigEndian.PutUint64(s.commit[10:], uint64(s.lsn+0x10)) // end LSN
		s.inTx, s.last = -1, s.lsn+0x10
		return s.decode(s.commit)
	}
	s.inTx++
	s.left--
	s.k++
	return s.decode(s.f.inserts[s.k%len(s.f.inserts)])
}

func (s *replayStream) decode(frame []byte) (*capture.Event, error) {
	if err := replication.Decode(frame, &s.msg); err != nil {
		return nil, err
	}
	m := &s.msg
	switch m.Type {
	case replication.MessageBegin:
		s.ev = capture.Event{Kind: capture.KindBegin, LSN: m.Begin.FinalLSN, CommitTime: m.Begin.CommitTime}
	case replication.MessageCommit:
		s.ev = capture.Event{Kind: capture.KindCommit, LSN: m.Commit.CommitLSN, EndLSN: m.Commit.EndLSN}
	case replication.MessageInsert:
		rel, ok := s.rels.Get(m.Insert.RelationID)
		if !ok {
			return nil, fmt.Errorf("relation %d unknown", m.Insert.RelationID)
		}
		r := &s.row
		r.Op, r.Table = capture.OpCreate, rel.QualifiedName()
		r.Position++
		r.Columns = r.Columns[:0]
		for i, c := range m.Insert.New.Columns {
			rc := &rel.Columns[i]
			r.Columns = append(r.Columns, capture.Column{Name: rc.Name, OID: rc.TypeOID, Text: c.Data,
				Null: c.Kind == replication.ColumnNull})
		}
		s.ev = capture.Event{Kind: capture.KindRow, LSN: s.lsn, Row: r}
	default:
		return nil, fmt.Errorf("unexpected %s frame", m.Type)
	}
	return &s.ev, nil
}

// waitConfirmed ends the stream once the last transaction is confirmed.
func (s *replayStream) waitConfirmed(ctx context.Context) error {
	for s.p.Confirmed() < s.last {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Microsecond):
		}
	}
	return capture.ErrEnd
}

func (s *replayStream) KeepAlive(context.Context) error    { return nil }
func (s *replayStream) Origin() (string, bool)             { return "", false }
func (s *replayStream) SnapshotDone(context.Context) error { return nil }
func (s *replayStream) Close(context.Context, capture.Ending) error {
	return nil
}
