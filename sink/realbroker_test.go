package sink

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
)

// On the bed's real Kafka 4: create a 3-partition topic, produce keyed
// records with acks=all, read them back in order with kafka-go's Reader, and
// check each key sits where Java's partitioner puts it.
func TestRealBrokerCreateProduceReadBack(t *testing.T) {
	brokers := strings.Split(testbed.KafkaBrokers(t), ",")
	cfg := Config{Brokers: brokers, TopicPartitions: 3, TopicReplicationFactor: -1}
	p := newTestProducer(t, cfg)
	topic := fmt.Sprintf("sink-test-%d", time.Now().UnixNano())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n, err := p.EnsureTopic(ctx, topic)
	if err != nil || n != 3 {
		t.Fatalf("EnsureTopic = %d, %v; want 3", n, err)
	}
	a := newAcks()
	ids := sendKeyed(t, p, a, topic, 100, 20)
	flush(t, p, 60*time.Second)
	a.exactlyOnce(t, ids)
	for _, id := range ids {
		if err := a.err(id); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	got := readTopic(t, brokers, topic)
	checkKeyOrder(t, got, 20)
	checkJavaPartitions(t, got, 3)
}

func TestRealBrokerMissingTopicWithoutCreation(t *testing.T) {
	brokers := strings.Split(testbed.KafkaBrokers(t), ",")
	cfg := Config{Brokers: brokers}
	cfg.Validate()
	cfg.AllowAutoCreateTopics = false
	p := newTestProducer(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := p.EnsureTopic(ctx, fmt.Sprintf("sink-missing-%d", time.Now().UnixNano()))
	if err == nil || !strings.Contains(err.Error(), KeyTopicPartitions) {
		t.Fatalf("EnsureTopic of a missing topic: %v", err)
	}
}
