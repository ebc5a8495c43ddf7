package sink

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
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
		if err := p.Send(ctx, Record{Topic: "bench", Partition: -1, Key: keys[i%len(keys)], Value: value, EventID: "e"}, ack); err != nil {
			b.Fatal(err)
		}
	}
	if err := p.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "records/s")
}
