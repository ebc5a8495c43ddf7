package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/outboxrelay/outboxrelay/internal/kafkaread"
)

// Offsets are the next offsets of each partition of each topic, captured
// before the run so that the consumer reads only what the run produced.
type Offsets map[string]map[int]int64

// endOffsets reads the end offset of every partition of topics; a topic
// that does not exist yet gets no entry (it will be read from offset 0).
func endOffsets(ctx context.Context, brokers []string, topics []string) (Offsets, error) {
	r := kafkaread.Reader{Broker: brokers[0]}
	out := Offsets{}
	for _, topic := range topics {
		ends, err := r.EndOffsets(ctx, topic)
		if err != nil {
			return nil, err
		}
		if ends != nil {
			out[topic] = ends
		}
	}
	return out, nil
}

// consumer reads every partition of the run's topics from the captured
// offsets, without a consumer group, and sends one Receipt per record.
type consumer struct {
	brokers []string
	from    Offsets
	run     string
	out     chan<- Receipt
	log     *slog.Logger
	// readCommitted: isolation.level=read_committed (the broker answers up
	// to the last stable offset; nothing is aborted in a benchmark run).
	readCommitted bool
}

// consume starts one reader per partition of each topic as soon as the
// topic exists (the relay may create it on its first event) and returns
// when ctx ends and every reader stopped. Errors other than ctx's end are
// returned joined.
func (c *consumer) consume(ctx context.Context, topics []string) error {
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for _, topic := range topics {
		wg.Go(func() {
			parts, err := c.waitTopic(ctx, topic)
			if err != nil {
				if ctx.Err() == nil {
					errs <- err
				}
				return
			}
			var inner sync.WaitGroup
			for _, p := range parts {
				inner.Go(func() {
					if err := c.readPartition(ctx, topic, p); err != nil && ctx.Err() == nil {
						select {
						case errs <- err:
						default:
						}
					}
				})
			}
			inner.Wait()
		})
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return errors.Join(all...)
}

func (c *consumer) waitTopic(ctx context.Context, topic string) ([]int, error) {
	r := kafkaread.Reader{Broker: c.brokers[0]}
	for {
		parts, err := r.Partitions(ctx, topic)
		if err == nil && len(parts) > 0 {
			c.log.Debug("consuming", "topic", topic, "partitions", len(parts))
			return parts, nil
		}
		if err != nil && !errors.Is(err, kafka.UnknownTopicOrPartition) && !errors.Is(err, kafka.LeaderNotAvailable) {
			c.log.Warn("waiting for topic", "topic", topic, "err", err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (c *consumer) readPartition(ctx context.Context, topic string, partition int) error {
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:        c.brokers,
		Topic:          topic,
		Partition:      partition,
		MinBytes:       1,
		MaxBytes:       16 << 20,
		MaxWait:        100 * time.Millisecond,
		IsolationLevel: isolation(c.readCommitted),
	})
	defer r.Close()
	if err := r.SetOffset(c.from[topic][partition]); err != nil {
		return fmt.Errorf("seeking %s/%d: %w", topic, partition, err)
	}
	for {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			return fmt.Errorf("reading %s/%d: %w", topic, partition, err)
		}
		rc := parseRecord(m.Value, c.run)
		rc.At = time.Now()
		select {
		case c.out <- rc:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// payload is the part of an event's value the benchmark reads.
type payload struct {
	Run  string `json:"run"`
	Seq  *int64 `json:"seq"`
	A    int64  `json:"a"`
	ASeq int64  `json:"aseq"`
	Ts   int64  `json:"ts"`
}

// parseRecord reads the event numbers from a record value: the payload
// object itself (EventRouter with expand.json.payload, or a relay that
// sends the payload as is), or that object as a JSON string (EventRouter
// without expansion and a JsonConverter). Anything else, or an event of
// another run, is Foreign.
func parseRecord(value []byte, run string) Receipt {
	value = bytes.TrimSpace(value)
	if len(value) > 0 && value[0] == '"' {
		var s string
		if err := json.Unmarshal(value, &s); err != nil {
			return Receipt{Foreign: true}
		}
		value = []byte(s)
	}
	var p payload
	if err := json.Unmarshal(value, &p); err != nil || p.Run != run || p.Seq == nil {
		return Receipt{Foreign: true}
	}
	return Receipt{Event: Event{Seq: *p.Seq, Agg: p.A, ASeq: p.ASeq}, InsertedUs: p.Ts}
}

func isolation(committed bool) kafka.IsolationLevel {
	if committed {
		return kafka.ReadCommitted
	}
	return kafka.ReadUncommitted
}
