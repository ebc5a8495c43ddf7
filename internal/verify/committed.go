package verify

import (
	"context"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/outboxrelay/outboxrelay/internal/kafkabatch"
	"github.com/outboxrelay/outboxrelay/internal/kafkaread"
)

// TopicsCommitted is Topics as a read_committed consumer reads them
// (exactly.once.support=required): records of aborted Kafka transactions
// are left out, and each partition is read to its high watermark, waiting
// (until ctx ends) while an open transaction holds the last stable offset
// below it. The fetches go through kafkaread.FetchTransport, which decodes
// in this goroutine: a broker's answer that panics kafka-go's decoder
// (segmentio/kafka-go#1438) is an error, where kafka.Transport's goroutines
// would end the process.
func TopicsCommitted(ctx context.Context, dialer *kafka.Dialer, brokers string, topics []string, idHeader string) ([]Delivery, error) {
	r := kafkaread.Reader{Broker: brokers, Dialer: dialer}
	c := &kafka.Client{Addr: kafka.TCP(brokers), Transport: &kafkaread.FetchTransport{Brokers: []string{brokers}, Dialer: dialer}, Timeout: 30 * time.Second}
	var out []Delivery
	for _, topic := range topics {
		ends, err := r.EndOffsets(ctx, topic)
		if err != nil {
			return nil, fmt.Errorf("verify: %w", err)
		}
		for p, end := range ends {
			ds, err := partitionCommitted(ctx, c, kafkabatch.TopicPartition{Topic: topic, Partition: p}, end, idHeader)
			if err != nil {
				return nil, fmt.Errorf("verify: %w", err)
			}
			out = append(out, ds...)
		}
	}
	return out, nil
}

func partitionCommitted(ctx context.Context, c *kafka.Client, tp kafkabatch.TopicPartition, end int64, idHeader string) ([]Delivery, error) {
	var out []Delivery
	for next := int64(0); next < end; {
		f, err := kafkabatch.FetchCommitted(ctx, c, tp, next, 4<<20)
		if err != nil {
			return nil, err
		}
		for _, b := range f.Batches {
			for _, rec := range b.Records {
				d := Delivery{Key: string(rec.Key), Topic: tp.Topic, Partition: tp.Partition, Offset: b.BaseOffset + int64(rec.OffsetDelta)}
				for _, h := range rec.Headers {
					if h.Key == idHeader {
						d.ID = string(h.Value)
					}
				}
				out = append(out, d)
			}
		}
		switch {
		case f.Next > next:
			next = f.Next
		case next < f.LastStableOffset:
			next = f.LastStableOffset
		default: // an open transaction at next
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("reading %s/%d read_committed: a transaction stays open at offset %d: %w", tp.Topic, tp.Partition, next, ctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return out, nil
}
