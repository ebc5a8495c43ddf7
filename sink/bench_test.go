package sink

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/outboxrelay/outboxrelay/router"
)

// BenchmarkSend measures records/s through the producer to kfake: 300-byte
// values over 100 keys on 3 partitions, acks=all, default linger.
func BenchmarkSend(b *testing.B) {
	_, addr := newCluster(b, kfake.SeedTopics(3, "bench"))
	p := newTestProducer(b, Config{Brokers: []string{addr}})
	value := make([]byte, 300)
	keys := make([][]byte, 100)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("aggregate-%d", i))
	}
	ack := func(err error) {
		if err != nil {
			b.Error(err)
		}
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if err := p.Send(ctx, router.Record{Topic: "bench", Partition: -1, Key: keys[i%len(keys)], Value: value, EventID: "e"}, ack); err != nil {
			b.Fatal(err)
		}
	}
	if err := p.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "records/s")
}

// BenchmarkProduceRoundTrip measures one produce request per record, as a
// steady low rate sends them: linger.ms=0, one partition, each record
// acknowledged before the next is sent. Its cost per op is the transport's
// per-request cost (wake-ups, hand-offs, syscalls), most of what a record
// costs the sink at 1,000 events/s. cpu-ns/op is the process's, kfake's
// included.
func BenchmarkProduceRoundTrip(b *testing.B) {
	_, addr := newCluster(b, kfake.SeedTopics(1, "bench"))
	p := newTestProducer(b, Config{Brokers: []string{addr}, Linger: time.Nanosecond})
	value := make([]byte, 300)
	done := make(chan error, 1)
	ack := func(err error) { done <- err }
	ctx := context.Background()
	send := func() {
		if err := p.Send(ctx, router.Record{Topic: "bench", Partition: 0, Key: []byte("k"), Value: value, EventID: "e"}, ack); err != nil {
			b.Fatal(err)
		}
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
	send() // connect and learn the layout outside the timing
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU(b)
	for i := 0; i < b.N; i++ {
		send()
	}
	b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// processCPU is the process's user and system CPU time so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
