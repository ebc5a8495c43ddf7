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
)

// Offsets are the next offsets of each partition of each topic, captured
// before the run so that the consumer reads only what the run produced.
type Offsets map[string]map[int]int64

// endOffsets reads the end offset of every partition of topics; a topic
// that does not exist yet gets no entry (it will be read from offset 0).
func endOffsets(ctx context.Context, brokers []string, topics []string) (Offsets, error) {
	out := Offsets{}
	for _, topic := range topics {
		parts, err := partitions(ctx, brokers, topic)
		if errors.Is(err, kafka.UnknownTopicOrPartition) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[topic] = map[int]int64{}
		for _, p := range parts {
			off, err := lastOffset(ctx, brokers, topic, p)
			if err != nil {
				return nil, err
			}
			out[topic][p] = off
		}
	}
	return out, nil
}

func partitions(ctx context.Context, brokers []string, topic string) ([]int, error) {
	conn, err := kafka.DialContext(ctx, "tcp", brokers[0])
	if err != nil {
		return nil, fmt.Errorf("dialing Kafka %s: %w", brokers[0], err)
	}
	defer conn.Close()
	ps, err := conn.ReadPartitions(topic)
	if err != nil {
		return nil, fmt.Errorf("reading partitions of %s: %w", topic, err)
	}
	ids := make([]int, 0, len(ps))
	for _, p := range ps {
		ids = append(ids, p.ID)
	}
	return ids, nil
}

func lastOffset(ctx context.Context, brokers []string, topic string, partition int) (int64, error) {
	conn, err := kafka.DialLeader(ctx, "tcp", brokers[0], topic, partition)
	if err != nil {
		return 0, fmt.Errorf("dialing leader of %s/%d: %w", topic, partition, err)
	}
	defer conn.Close()
	off, err := conn.ReadLastOffset()
	if err != nil {
		return 0, fmt.Errorf("reading end offset of %s/%d: %w", topic, partition, err)
	}
	return off, nil
}

// consumer reads every partition of the run's topics from the captured
// offsets, without a consumer group, and sends one Receipt per record.
type consumer struct {
	brokers []string
	from    Offsets
	run     string
	out     chan<- Receipt
	log     *slog.Logger
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
	for {
		parts, err := partitions(ctx, c.brokers, topic)
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
		Brokers:   c.brokers,
		Topic:     topic,
		Partition: partition,
		MinBytes:  1,
		MaxBytes:  16 << 20,
		MaxWait:   100 * time.Millisecond,
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
