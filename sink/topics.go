package sink

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	kafka "github.com/segmentio/kafka-go"
	metadataAPI "github.com/segmentio/kafka-go/protocol/metadata"
)

// topicState is what the producer knows of one topic. Guarded by Producer.mu.
type topicState struct {
	partitions []int // 0..n-1, the form kafka-go's balancer takes; nil until looked up
	resolvedAt time.Time
	// pending holds records, in Send order, waiting for a partition-count
	// lookup; while it is non-empty every new record of the topic queues
	// behind it.
	pending   []*pending
	resolving bool
	// sticky is the partition null-key records go to until stickyBytes
	// reaches a batch, as Java's sticky partitioner does.
	sticky      int
	stickyBytes int
}

// choose picks the partition of a record without an explicit one.
func (ts *topicState) choose(pe *pending, batchBytes int) int {
	if pe.Key == nil {
		if ts.sticky < 0 || ts.sticky >= len(ts.partitions) || ts.stickyBytes >= batchBytes {
			ts.sticky, ts.stickyBytes = rand.IntN(len(ts.partitions)), 0
		}
		ts.stickyBytes += pe.Size
		return ts.sticky
	}
	return JavaPartition(pe.Key, len(ts.partitions), ts.partitions)
}

// murmur2 is kafka-go's Murmur2Balancer, which computes Java's
// toPositive(murmur2(key)) % partitions (pinned by TestMurmur2MatchesJava).
// Consistent makes a null key hash like an empty one instead of random; we
// never pass a null key.
var murmur2 = kafka.Murmur2Balancer{Consistent: true}

// JavaPartition returns the partition Java's default partitioner picks for a
// non-null serialized key on a topic with n partitions. partitions may be
// nil, or the slice 0..n-1 to save building it.
func JavaPartition(key []byte, n int, partitions []int) int {
	if len(partitions) != n {
		partitions = partitionList(n)
	}
	return murmur2.Balance(kafka.Message{Key: key}, partitions...)
}

func partitionList(n int) []int {
	l := make([]int, n)
	for i := range l {
		l[i] = i
	}
	return l
}

// resolve looks up the topic's partition count (creating the topic when the
// config says so), then routes the records that waited for it. Transient
// failures are retried until the producer closes.
func (p *Producer) resolve(topic string) {
	defer p.wg.Done()
	rl := retryLog{log: p.log, what: "topic metadata lookup", attrs: []any{"topic", topic}}
	var n int
	var err error
	for {
		n, err = p.lookup(p.ctx, topic, p.neededPartitions(topic))
		if err == nil || !retryable(err) || p.ctx.Err() != nil {
			break
		}
		wait := p.backoff(rl.attempt + 1)
		rl.failed(err, wait)
		if !p.sleep(wait) {
			break
		}
	}
	if p.ctx.Err() != nil {
		err = ErrClosed
	}
	if err == nil {
		rl.recovered()
	}

	p.mu.Lock()
	ts := p.topics[topic]
	waiting := ts.pending
	ts.pending, ts.resolving = nil, false
	var failed []*pending
	if err != nil {
		// Forget the topic so a later Send looks again: it may exist by then.
		delete(p.topics, topic)
		failed = waiting
	} else {
		ts.partitions, ts.resolvedAt = partitionList(n), time.Now()
		for _, pe := range waiting {
			if pe.Partition >= n {
				failed = append(failed, pe)
				continue
			}
			if p.routeLocked(topic, ts, pe) {
				failed = append(failed, pe)
			}
		}
	}
	p.mu.Unlock()

	for _, pe := range failed {
		switch {
		case err != nil:
			p.ack(pe, err)
		case p.ctx.Err() != nil:
			p.ack(pe, ErrClosed)
		default:
			p.ack(pe, &RecordError{Topic: topic, Partition: pe.Partition, EventID: pe.EventID,
				Err: fmt.Errorf("%w: the topic has %d partitions", ErrNoSuchPartition, n)})
		}
	}
}

// neededPartitions is one more than the highest explicit partition waiting,
// so the lookup knows when a cached count is too small to trust.
func (p *Producer) neededPartitions(topic string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	need := 1
	if ts := p.topics[topic]; ts != nil {
		for _, pe := range ts.pending {
			need = max(need, pe.Partition+1)
		}
	}
	return need
}

// EnsureTopic returns the topic's partition count, creating the topic when
// the config says so (topic.creation.default.*, or the dead-letter topic),
// or leaving it to the broker's auto-creation (allow.auto.create.topics).
// A missing topic that nothing creates is ErrTopicMissing.
func (p *Producer) EnsureTopic(ctx context.Context, topic string) (int, error) {
	n, err := p.lookup(ctx, topic, 1)
	if err != nil {
		return 0, fmt.Errorf("sink: ensuring topic %q: %w", topic, err)
	}
	return n, nil
}

// lookup returns the partition count of topic, which must be at least need
// for the answer to be trusted without asking the cluster again.
func (p *Producer) lookup(ctx context.Context, topic string, need int) (int, error) {
	// kafka-go's Transport answers from its metadata cache, which lags the
	// cluster by up to its refresh period; ask the cluster itself before
	// concluding that a topic or partition is missing.
	n, err := p.partitionCount(ctx, topic, false)
	if err == nil && n >= need {
		return n, nil
	}
	if err != nil && !errors.Is(err, kafka.UnknownTopicOrPartition) {
		return 0, err
	}
	p.refreshMetadataNow()
	n, err = p.partitionCount(ctx, topic, false)
	if err == nil || !errors.Is(err, kafka.UnknownTopicOrPartition) {
		// A fresh count, even one below need: the caller fails the
		// records that name a partition the topic lacks.
		return n, err
	}

	if parts, rf, ok := p.creationSpec(topic); ok {
		if err := p.createTopic(ctx, topic, parts, rf); err != nil {
			return 0, err
		}
		n, err := p.partitionCount(ctx, topic, false)
		if errors.Is(err, kafka.UnknownTopicOrPartition) {
			// Created but not yet in the cache; the retry loop asks again.
			p.refreshMetadata()
			return 0, fmt.Errorf("topic %q created, waiting for its metadata: %w", topic, kafka.LeaderNotAvailable)
		}
		return n, err
	}
	if p.cfg.AllowAutoCreateTopics {
		// As Connect's producer does: let the broker's
		// auto.create.topics.enable decide. A topic being created answers
		// LEADER_NOT_AVAILABLE, which the retry loop waits out.
		n, err := p.partitionCount(ctx, topic, true)
		if !errors.Is(err, kafka.UnknownTopicOrPartition) {
			return n, err
		}
	}
	return 0, fmt.Errorf("%w: %q; create it, or set %s and %s (-1 = broker default) to have outboxrelay create missing topics",
		ErrTopicMissing, topic, KeyTopicPartitions, KeyTopicReplication)
}

// creationSpec says whether and how a missing topic is created. The
// dead-letter topic is created as Connect creates it: one partition.
func (p *Producer) creationSpec(topic string) (partitions, replication int, ok bool) {
	if topic == p.cfg.DeadLetterTopic {
		return 1, p.cfg.DeadLetterReplicationFactor, true
	}
	if p.cfg.createsTopics() {
		return p.cfg.TopicPartitions, p.cfg.TopicReplicationFactor, true
	}
	return 0, 0, false
}

func (p *Producer) createTopic(ctx context.Context, topic string, partitions, replication int) error {
	tc := kafka.TopicConfig{Topic: topic, NumPartitions: partitions, ReplicationFactor: replication}
	if topic != p.cfg.DeadLetterTopic {
		for _, name := range slices.Sorted(maps.Keys(p.cfg.TopicConfigs)) {
			tc.ConfigEntries = append(tc.ConfigEntries, kafka.ConfigEntry{ConfigName: name, ConfigValue: p.cfg.TopicConfigs[name]})
		}
	}
	res, err := p.client.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{tc}})
	if err != nil {
		return fmt.Errorf("creating topic %q: %w", topic, err)
	}
	err = res.Errors[topic]
	if err == nil || errors.Is(err, kafka.TopicAlreadyExists) {
		if err == nil {
			p.log.Info("created topic", "topic", topic, "partitions", partitions, "replication_factor", replication)
		}
		return nil
	}
	if errors.Is(err, kafka.InvalidConfiguration) || errors.Is(err, kafka.PolicyViolation) {
		return fmt.Errorf("creating topic %q with configs %v: %w (check the %s* keys)", topic, p.cfg.TopicConfigs, err, topicCreationPrefix)
	}
	if errors.Is(err, kafka.InvalidReplicationFactor) || errors.Is(err, kafka.InvalidPartitionNumber) {
		return fmt.Errorf("creating topic %q with %d partitions, replication factor %d: %w (check %s and %s)",
			topic, partitions, replication, err, KeyTopicPartitions, KeyTopicReplication)
	}
	return fmt.Errorf("creating topic %q: %w", topic, err)
}

// partitionCount asks kafka-go's Transport for the topic's metadata. With
// autoCreate the request goes to the broker and lets it auto-create.
func (p *Producer) partitionCount(ctx context.Context, topic string, autoCreate bool) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.RequestTimeout)
	defer cancel()
	r, err := p.transport.RoundTrip(ctx, p.client.Addr, &metadataAPI.Request{
		TopicNames:             []string{topic},
		AllowAutoTopicCreation: autoCreate,
	})
	if err != nil {
		return 0, fmt.Errorf("fetching metadata of topic %q: %w", topic, err)
	}
	for _, t := range r.(*metadataAPI.Response).Topics {
		if t.Name != topic {
			continue
		}
		if t.ErrorCode != 0 {
			return 0, fmt.Errorf("metadata of topic %q: %w", topic, kafka.Error(t.ErrorCode))
		}
		if len(t.Partitions) == 0 {
			return 0, fmt.Errorf("metadata of topic %q lists no partitions: %w", topic, kafka.LeaderNotAvailable)
		}
		return len(t.Partitions), nil
	}
	return 0, fmt.Errorf("metadata of topic %q: %w", topic, kafka.UnknownTopicOrPartition)
}
