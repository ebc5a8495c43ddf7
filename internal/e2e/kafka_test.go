package e2e_test

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/outboxrelay/outboxrelay/internal/kafkaread"
	"github.com/outboxrelay/outboxrelay/internal/testbed"
)

// record is what the tests look at in a consumed Kafka record.
type record struct {
	Partition int
	Offset    int64
	Key       string
	ID        int64 // the "id" header: the outbox row's id
	Value     []byte
}

// consume reads topic from the beginning, all partitions, until want
// records arrived, then quiet more for records that should not be there.
// Records of one partition come back in offset order. After timeout it
// marks the test failed, with the state of the fixture's slot and
// walsender, and returns what arrived, so that the test can say which
// records are missing.
func (f *fixture) consume(t *testing.T, topic string, want int, timeout, quiet time.Duration) []record {
	t.Helper()
	deadline := time.Now().Add(timeout)
	f.waitPartitions(t, topic, deadline)
	r := kafkaread.Reader{Broker: testbed.KafkaBrokers(t)}
	msgs, err := r.Wait(context.Background(), topic, nil, want, time.Until(deadline), quiet)
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("consuming %s: %v", topic, err)
	}
	out := make([]record, 0, len(msgs))
	for _, m := range msgs {
		rec, err := toRecord(m)
		if err != nil {
			t.Fatalf("consuming %s: %v", topic, err)
		}
		out = append(out, rec)
	}
	if err != nil {
		t.Errorf("topic %s: %d of %d records after %s; %s", topic, len(out), want, timeout, f.slotState(t))
	}
	return out
}

func toRecord(m kafka.Message) (record, error) {
	r := record{Partition: m.Partition, Offset: m.Offset, Key: string(m.Key), Value: m.Value}
	for _, h := range m.Headers {
		if h.Key == "id" {
			id, err := strconv.ParseInt(string(h.Value), 10, 64)
			if err != nil {
				return r, errors.New("record " + strconv.FormatInt(m.Offset, 10) + " has id header " + strconv.Quote(string(h.Value)) + ", not a number")
			}
			r.ID = id
		}
	}
	return r, nil
}

// waitPartitions returns the partition ids of topic, waiting for the relay
// to create it.
func (f *fixture) waitPartitions(t *testing.T, topic string, deadline time.Time) []int {
	t.Helper()
	for {
		conn, err := kafka.Dial("tcp", testbed.KafkaBrokers(t))
		if err != nil {
			t.Fatalf("dialing Kafka: %v", err)
		}
		ps, err := conn.ReadPartitions(topic)
		conn.Close()
		if err == nil && len(ps) > 0 {
			ids := make([]int, len(ps))
			for i, p := range ps {
				ids[i] = p.ID
			}
			sort.Ints(ids)
			return ids
		}
		if time.Now().After(deadline) {
			t.Fatalf("topic %s never appeared: %v; %s", topic, err, f.slotState(t))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func kafkaClient(t *testing.T) *kafka.Client {
	t.Helper()
	return &kafka.Client{Addr: kafka.TCP(testbed.KafkaBrokers(t)), Timeout: 30 * time.Second}
}

// createTopic creates topic with partitions partitions and removes it at
// the end of the test.
func createTopic(t *testing.T, topic string, partitions int) {
	t.Helper()
	res, err := kafkaClient(t).CreateTopics(context.Background(), &kafka.CreateTopicsRequest{
		Topics: []kafka.TopicConfig{{Topic: topic, NumPartitions: partitions, ReplicationFactor: 1}},
	})
	if err == nil {
		err = res.Errors[topic]
	}
	if err != nil {
		t.Fatalf("creating topic %s: %v", topic, err)
	}
	t.Cleanup(func() { deleteTopics(t, topic) })
}

// deleteTopics deletes every topic whose name starts with prefix; errors
// are logged only, it is clean-up.
func deleteTopics(t *testing.T, prefix string) {
	t.Helper()
	conn, err := kafka.Dial("tcp", testbed.KafkaBrokers(t))
	if err != nil {
		t.Logf("clean-up: dialing Kafka: %v", err)
		return
	}
	ps, err := conn.ReadPartitions()
	conn.Close()
	if err != nil {
		t.Logf("clean-up: listing topics: %v", err)
		return
	}
	seen := map[string]bool{}
	var topics []string
	for _, p := range ps {
		if strings.HasPrefix(p.Topic, prefix) && !seen[p.Topic] {
			seen[p.Topic] = true
			topics = append(topics, p.Topic)
		}
	}
	if len(topics) == 0 {
		return
	}
	res, err := kafkaClient(t).DeleteTopics(context.Background(), &kafka.DeleteTopicsRequest{Topics: topics})
	if err != nil {
		t.Logf("clean-up: deleting topics %v: %v", topics, err)
		return
	}
	for topic, err := range res.Errors {
		if err != nil {
			t.Logf("clean-up: deleting topic %s: %v", topic, err)
		}
	}
}

// countIDs counts how often each outbox id arrived.
func countIDs(recs []record) map[int64]int {
	n := make(map[int64]int, len(recs))
	for _, r := range recs {
		n[r.ID]++
	}
	return n
}
