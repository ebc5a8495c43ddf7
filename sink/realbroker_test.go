package sink

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/outboxrelay/outboxrelay/internal/certerr"
	"github.com/outboxrelay/outboxrelay/internal/testbed"
	"github.com/outboxrelay/outboxrelay/router"
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

// TestRealBrokerTopicConfigs: topic.creation.default.<config> keys become
// the created topic's configs, as Connect's default creation group does.
func TestRealBrokerTopicConfigs(t *testing.T) {
	brokers := strings.Split(testbed.KafkaBrokers(t), ",")
	c, err := ParseConfig(map[string]string{
		KeyBootstrapServers: strings.Join(brokers, ","), KeyTopicPartitions: "1", KeyTopicReplication: "-1",
		"topic.creation.default.cleanup.policy": "compact", "topic.creation.default.retention.ms": "3600000",
	})
	if err != nil {
		t.Fatal(err)
	}
	p := newTestProducer(t, c)
	topic := fmt.Sprintf("sink-configs-%d", time.Now().UnixNano())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := p.EnsureTopic(ctx, topic); err != nil {
		t.Fatal(err)
	}
	client := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 30 * time.Second}
	res, err := client.DescribeConfigs(ctx, &kafka.DescribeConfigsRequest{Resources: []kafka.DescribeConfigRequestResource{{
		ResourceType: kafka.ResourceTypeTopic, ResourceName: topic, ConfigNames: []string{"cleanup.policy", "retention.ms"},
	}}})
	if err != nil || len(res.Resources) != 1 {
		t.Fatalf("DescribeConfigs: %v %v", err, res)
	}
	got := map[string]string{}
	for _, e := range res.Resources[0].ConfigEntries {
		got[e.ConfigName] = e.ConfigValue
	}
	if got["cleanup.policy"] != "compact" || got["retention.ms"] != "3600000" {
		t.Fatalf("topic %s configs %v; want cleanup.policy=compact retention.ms=3600000", topic, got)
	}
}

// TestRealBrokerLostAnswerNotDuplicated: on the bed's Kafka, the
// connection breaks after the broker took a produce request and before its
// answer arrives; the producer resends the batch on a new connection. With
// enable.idempotence (the default) the topic holds the batch once; with
// enable.idempotence=false, twice: the duplicate idempotence removes.
func TestRealBrokerLostAnswerNotDuplicated(t *testing.T) {
	brokers := strings.Split(testbed.KafkaBrokers(t), ",")
	for _, idempotent := range []bool{true, false} {
		t.Run(fmt.Sprint("idempotent=", idempotent), func(t *testing.T) {
			cfg := Config{Brokers: brokers, TopicPartitions: 1, TopicReplicationFactor: -1,
				Linger: 20 * time.Millisecond, RetryBackoff: 20 * time.Millisecond, DisableIdempotence: !idempotent}
			topic := fmt.Sprintf("sink-lost-answer-%v-%d", idempotent, time.Now().UnixNano())
			admin := newTestProducer(t, cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			if _, err := admin.EnsureTopic(ctx, topic); err != nil {
				t.Fatal(err)
			}
			checkLostAnswer(t, cfg, topic, idempotent)
		})
	}
}

// TestRealBrokerTLSAndSASL: the partition worker's own connection to the
// leader (wire.go) speaks TLS and SASL/SCRAM-SHA-512 to the bed's Kafka 4
// as kafka-go's Transport does (the records are acknowledged), and a wrong
// CA or password fails the records instead of being retried for ever.
// With a wrong CA or password, Send fails the records already when kafka-go
// resolves the topic, before any partition connection is dialed; so the
// test also dials the broker through the partition connection's own code
// (dialBroker) and checks its error: a certificate or SASL failure, not
// retried, explained with the config key to fix.
func TestRealBrokerTLSAndSASL(t *testing.T) {
	tlsBrokers, ca := testbed.KafkaTLS(t)
	_, wrongCA := testbed.PostgresTLS(t)
	saslBrokers, user, password := testbed.KafkaSASL(t)
	jaas := func(pw string) string {
		return `org.apache.kafka.common.security.scram.ScramLoginModule required username="` + user + `" password="` + pw + `";`
	}
	for _, tc := range []struct {
		name string
		kv   map[string]string
		ok   bool
		fix  string // the key explain names when !ok
	}{
		{"SSL", map[string]string{KeyBootstrapServers: tlsBrokers, KeySecurityProtocol: "SSL", KeyTruststoreLocation: ca}, true, ""},
		{"SSL wrong CA", map[string]string{KeyBootstrapServers: tlsBrokers, KeySecurityProtocol: "SSL", KeyTruststoreLocation: wrongCA}, false, KeyTruststoreLocation},
		{"SASL SCRAM-SHA-512", map[string]string{KeyBootstrapServers: saslBrokers, KeySecurityProtocol: "SASL_PLAINTEXT",
			KeySASLMechanism: "SCRAM-SHA-512", KeySASLJAASConfig: jaas(password)}, true, ""},
		{"SASL wrong password", map[string]string{KeyBootstrapServers: saslBrokers, KeySecurityProtocol: "SASL_PLAINTEXT",
			KeySASLMechanism: "SCRAM-SHA-512", KeySASLJAASConfig: jaas("wrong-" + password)}, false, KeySASLJAASConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.kv[KeyTopicPartitions], tc.kv[KeyTopicReplication] = "1", "-1"
			tc.kv["retry.backoff.ms"], tc.kv["retry.backoff.max.ms"] = "10", "100"
			cfg, err := ParseConfig(tc.kv)
			if err != nil {
				t.Fatal(err)
			}
			p := newTestProducer(t, cfg)
			topic := fmt.Sprintf("sink-security-%d", time.Now().UnixNano())
			a := newAcks()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			if !tc.ok {
				checkDialRefused(ctx, t, p, cfg.Brokers[0], tc.fix)
			}
			for i := range 3 {
				id := fmt.Sprintf("ev-%d", i)
				if err := p.Send(ctx, router.Record{Topic: topic, Partition: -1, Key: []byte("k"), Value: []byte("v"), EventID: id}, a.cb(id)); err != nil {
					if tc.ok {
						t.Fatal(err)
					}
					return // refused before sending: as good as a failed ack
				}
			}
			flush(t, p, 60*time.Second)
			for i := range 3 {
				err := a.err(fmt.Sprintf("ev-%d", i))
				if tc.ok && err != nil {
					t.Fatalf("ev-%d: %v", i, err)
				}
				if !tc.ok && err == nil {
					t.Fatalf("ev-%d acknowledged", i)
				}
			}
		})
	}
}

// checkDialRefused dials addr as a partition's own connection does and
// fails unless the broker's refusal is a certificate or SASL failure, not
// retried, and explained naming the config key fix.
func checkDialRefused(ctx context.Context, t *testing.T, p *Producer, addr, fix string) {
	t.Helper()
	pc, err := p.dialBroker(ctx, addr)
	if pc != nil {
		pc.Close()
	}
	if err == nil {
		t.Fatalf("dialBroker(%s) succeeded", addr)
	}
	if !certerr.Failed(err) && !errors.Is(err, kafka.SASLAuthenticationFailed) {
		t.Fatalf("dialBroker(%s): %v; want a certificate or SASL authentication failure", addr, err)
	}
	if retryable(err) {
		t.Fatalf("dialBroker(%s): %v is retried", addr, err)
	}
	if msg := explain(err).Error(); !strings.Contains(msg, fix) {
		t.Fatalf("dialBroker(%s): %q does not name %s", addr, msg, fix)
	}
}

// Regression: ValidateTopicCreation went through kafka-go's Transport,
// which after a CreateTopics answer waits for the topic to appear in the
// metadata; validate_only never creates it, so `outboxrelay check` spent
// request.timeout.ms (30 s) on every topic that did not exist yet. The
// call must answer well inside its deadline, create nothing, and still
// report what the broker refuses.
func TestRealBrokerValidateTopicCreation(t *testing.T) {
	brokers := strings.Split(testbed.KafkaBrokers(t), ",")
	cfg := Config{Brokers: brokers, TopicPartitions: 1, TopicReplicationFactor: -1}
	cfg.Validate()
	cfg.TopicPartitions, cfg.TopicReplicationFactor, cfg.RequestTimeout = 1, -1, time.Minute
	p := newTestProducer(t, cfg)
	topic := fmt.Sprintf("sink-validate-%d", time.Now().UnixNano())
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := p.ValidateTopicCreation(ctx, topic); err != nil || ctx.Err() != nil {
		t.Fatalf("ValidateTopicCreation(%s) = %v (context: %v); want nil well before the deadline", topic, err, ctx.Err())
	}
	if n, err := p.TopicPartitions(ctx, topic); err != nil || n != 0 {
		t.Fatalf("after validate_only, topic %s has %d partitions (%v); want it not created", topic, n, err)
	}
	p.cfg.TopicReplicationFactor = 99
	err := p.ValidateTopicCreation(ctx, topic)
	if err == nil || !strings.Contains(err.Error(), KeyTopicReplication) {
		t.Fatalf("replication factor 99 on a one-broker bed: %v; want a refusal naming %s", err, KeyTopicReplication)
	}
}
