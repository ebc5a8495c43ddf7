// Package kafkaread reads back what reached Kafka, without a consumer
// group and without committing anything: outboxrelay verify, the
// conformance runner, the benchmark and the tests use it. A read covers a
// partition from an offset up to the partition's end offset as of the call;
// callers that wait for records call it again. kafka-go decodes a broker's
// answers in the goroutine that reads, here and through FetchTransport (the
// read_committed fetches of verify), so that a panic of its decoder on a
// malformed answer (segmentio/kafka-go#1438) is an error, ErrDecoderPanic,
// rather than the end of the process.
package kafkaread

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"
)

// Reader reads from the cluster behind one broker address.
type Reader struct {
	Broker string        // host:port of any broker
	Dialer *kafka.Dialer // TLS, SASL, timeouts; nil: kafka.DefaultDialer
}

// Bounds of one read. A batch holds at least one record batch whatever
// its size (the broker sends a larger one whole), so maxBatchBytes only
// bounds how much one fetch may bring.
const (
	maxBatchBytes = 32 << 20
	readTimeout   = 10 * time.Second
	// Right after a topic is created its partitions may still be electing
	// their leader: such answers are retried this often, this far apart.
	leaderAttempts = 20
	leaderBackoff  = 250 * time.Millisecond
)

func (r Reader) dialer() *kafka.Dialer {
	if r.Dialer != nil {
		return r.Dialer
	}
	return kafka.DefaultDialer
}

// Partitions returns the partition ids of topic, in the broker's order. A
// topic that does not exist gives an error that errors.Is matches with
// kafka.UnknownTopicOrPartition.
func (r Reader) Partitions(ctx context.Context, topic string) ([]int, error) {
	conn, err := r.dialer().DialContext(ctx, "tcp", r.Broker)
	if err != nil {
		return nil, fmt.Errorf("dialing Kafka %s: %w", r.Broker, err)
	}
	defer conn.Close()
	ps, err := conn.ReadPartitions(topic)
	if err != nil {
		return nil, fmt.Errorf("reading partitions of %s: %w", topic, err)
	}
	ids := make([]int, len(ps))
	for i, p := range ps {
		ids[i] = p.ID
	}
	return ids, nil
}

// EndOffsets returns the next offset of every partition of topic: what a
// read from them returns is what was written after this call. A topic that
// does not exist yet gives nil and no error (every offset is then 0).
func (r Reader) EndOffsets(ctx context.Context, topic string) (map[int]int64, error) {
	parts, err := r.Partitions(ctx, topic)
	if errors.Is(err, kafka.UnknownTopicOrPartition) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make(map[int]int64, len(parts))
	for _, p := range parts {
		err := r.withLeader(ctx, topic, p, func(conn *kafka.Conn) error {
			last, err := conn.ReadLastOffset()
			out[p] = last
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("reading the end offset of %s/%d: %w", topic, p, err)
		}
	}
	return out, nil
}

// Topic reads every record of every partition of topic, from the start of
// each to its end offset as of the call, partition by partition in the
// broker's order, each in offset order. A topic that does not exist gives
// nil and no error.
func (r Reader) Topic(ctx context.Context, topic string) ([]kafka.Message, error) {
	parts, err := r.Partitions(ctx, topic)
	if errors.Is(err, kafka.UnknownTopicOrPartition) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []kafka.Message
	for _, p := range parts {
		msgs, err := r.Partition(ctx, topic, p, 0)
		if err != nil {
			return nil, err
		}
		out = append(out, msgs...)
	}
	return out, nil
}

// Partition reads one partition from offset from (or from its first offset,
// when retention removed the records before it) up to its end offset as of
// the call, in offset order. It returns nil when nothing is there.
func (r Reader) Partition(ctx context.Context, topic string, partition int, from int64) ([]kafka.Message, error) {
	var out []kafka.Message
	err := r.withLeader(ctx, topic, partition, func(conn *kafka.Conn) error {
		var err error
		out, err = readRange(conn, topic, partition, from)
		return err
	})
	return out, err
}

// Wait reads topic from the offsets in from (nil, or a partition missing
// there: from the start) until want records arrived, then quiet more for
// records that should not be there, polling; it first waits for the topic
// to exist. Records come back in the order read, each partition's in
// offset order. When timeout passes before want records arrived it returns
// what arrived and an error wrapping context.DeadlineExceeded; the quiet
// wait is not bounded by timeout. ctx cancels it.
func (r Reader) Wait(ctx context.Context, topic string, from map[int]int64, want int, timeout, quiet time.Duration) ([]kafka.Message, error) {
	deadline := time.Now().Add(timeout)
	parts, err := r.waitPartitions(ctx, topic, deadline)
	if err != nil {
		return nil, err
	}
	next := make(map[int]int64, len(parts))
	for _, p := range parts {
		next[p] = from[p]
	}
	var out []kafka.Message
	var quietUntil time.Time
	for {
		progressed := false
		for _, p := range parts {
			msgs, err := r.Partition(ctx, topic, p, next[p])
			if err != nil {
				return out, err
			}
			if len(msgs) > 0 {
				progressed = true
				next[p] = msgs[len(msgs)-1].Offset + 1
				out = append(out, msgs...)
			}
		}
		now := time.Now()
		if len(out) >= want && quietUntil.IsZero() {
			quietUntil = now.Add(quiet)
		}
		if !quietUntil.IsZero() && now.After(quietUntil) {
			return out, nil
		}
		if quietUntil.IsZero() && now.After(deadline) {
			return out, fmt.Errorf("topic %s: %d of %d records after %s: %w", topic, len(out), want, timeout, context.DeadlineExceeded)
		}
		if !progressed {
			if err := sleep(ctx, pollInterval); err != nil {
				return out, err
			}
		}
	}
}

// pollInterval is how long Wait waits before reading again when the last
// round brought nothing.
const pollInterval = 50 * time.Millisecond

// waitPartitions returns topic's partitions once the topic exists.
func (r Reader) waitPartitions(ctx context.Context, topic string, deadline time.Time) ([]int, error) {
	for {
		parts, err := r.Partitions(ctx, topic)
		if err == nil && len(parts) > 0 {
			return parts, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("topic %s never appeared (%v): %w", topic, err, context.DeadlineExceeded)
		}
		if err := sleep(ctx, 2*pollInterval); err != nil {
			return nil, err
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// withLeader runs f on a connection to partition's leader, again on a new
// connection while the partition has no leader yet.
func (r Reader) withLeader(ctx context.Context, topic string, partition int, f func(*kafka.Conn) error) error {
	for attempt := 1; ; attempt++ {
		conn, err := r.dialer().DialLeader(ctx, "tcp", r.Broker, topic, partition)
		if err != nil {
			err = fmt.Errorf("dialing the leader of %s/%d: %w", topic, partition, err)
		} else {
			err = f(conn)
			conn.Close()
		}
		if err == nil || attempt == leaderAttempts || !(errors.Is(err, kafka.NotLeaderForPartition) || errors.Is(err, kafka.LeaderNotAvailable)) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(leaderBackoff):
		}
	}
}

// readRange reads [max(from, first), last) of the partition conn leads.
func readRange(conn *kafka.Conn, topic string, partition int, from int64) ([]kafka.Message, error) {
	first, last, err := conn.ReadOffsets()
	if err != nil {
		return nil, fmt.Errorf("reading the offsets of %s/%d: %w", topic, partition, err)
	}
	var out []kafka.Message
	for off := max(from, first); off < last; {
		msgs, err := readBatch(leaderConn{conn}, topic, partition, off, last)
		if err != nil {
			return nil, err
		}
		out = append(out, msgs...)
		off = msgs[len(msgs)-1].Offset + 1
	}
	return out, nil
}

// batchConn is what readBatch uses of a connection to a partition's
// leader: leaderConn, a *kafka.Conn.
type batchConn interface {
	Seek(offset int64, whence int) (int64, error)
	SetReadDeadline(t time.Time) error
	ReadBatch(minBytes, maxBytes int) messageBatch
}

// messageBatch is a *kafka.Batch: the records of one fetch.
type messageBatch interface {
	ReadMessage() (kafka.Message, error)
	Close() error
}

type leaderConn struct{ *kafka.Conn }

func (c leaderConn) ReadBatch(minBytes, maxBytes int) messageBatch {
	return c.Conn.ReadBatch(minBytes, maxBytes)
}

// readBatch fetches once from off and returns the records before last,
// at least one. kafka-go decodes the fetch answer here, in the calling
// goroutine: a panic of its decoder (ErrDecoderPanic) becomes an error.
func readBatch(conn batchConn, topic string, partition int, off, last int64) (out []kafka.Message, err error) {
	defer recoverDecoder(&err, topic, partition, off)
	if _, err := conn.Seek(off, kafka.SeekAbsolute); err != nil {
		return nil, fmt.Errorf("seeking %s/%d to %d: %w", topic, partition, off, err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(readTimeout))
	batch := conn.ReadBatch(1, maxBatchBytes)
	for next := off; next < last; {
		m, err := batch.ReadMessage()
		if err != nil {
			break
		}
		out = append(out, m)
		next = m.Offset + 1
	}
	if err := batch.Close(); err != nil && len(out) == 0 {
		return nil, fmt.Errorf("reading %s/%d at offset %d of %d: %w", topic, partition, off, last, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("reading %s/%d: no progress at offset %d of %d", topic, partition, off, last)
	}
	return out, nil
}
