package consumer_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/segmentio/kafka-go"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
)

// bed is one test's private topic, schema (with processed_events and a
// side-effect table) and connection pool.
type bed struct {
	brokers string
	topic   string
	schema  string
	pool    *pgxpool.Pool
}

func newBed(t *testing.T, partitions int) *bed {
	t.Helper()
	admin := testbed.Admin(t)
	b := &bed{brokers: testbed.KafkaBrokers(t)}
	name := fmt.Sprintf("consumer_%s_%d", strings.ToLower(strings.ReplaceAll(t.Name(), "/", "_")), time.Now().UnixNano()%1e9)
	b.topic, b.schema = name, name
	ddl, err := os.ReadFile("../sql/processed_events.sql")
	if err != nil {
		t.Fatal(err)
	}
	testbed.Exec(t, admin, `CREATE SCHEMA `+name,
		strings.ReplaceAll(string(ddl), "public.", name+"."),
		`CREATE TABLE `+name+`.applied (event_id text PRIMARY KEY, key text, seq int, part int, off bigint)`)
	t.Cleanup(func() { _, _ = admin.Exec(context.Background(), `DROP SCHEMA `+name+` CASCADE`) })

	b.pool, err = pgxpool.New(context.Background(), testbed.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.pool.Close)
	createTopic(t, b.brokers, b.topic, partitions)
	return b
}

func createTopic(t *testing.T, brokers, topic string, partitions int) {
	t.Helper()
	conn, err := kafka.Dial("tcp", brokers)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctrl, err := conn.Controller()
	if err != nil {
		t.Fatal(err)
	}
	cc, err := kafka.Dial("tcp", net.JoinHostPort(ctrl.Host, strconv.Itoa(ctrl.Port)))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	if err := cc.CreateTopics(kafka.TopicConfig{Topic: topic, NumPartitions: partitions, ReplicationFactor: 1}); err != nil {
		t.Fatalf("creating topic %s: %v", topic, err)
	}
	// The broker answers CreateTopics before every partition has a leader.
	waitFor(t, 30*time.Second, "topic "+topic+" to have leaders", func() bool {
		parts, err := conn.ReadPartitions(topic)
		if err != nil || len(parts) != partitions {
			return false
		}
		for _, p := range parts {
			if p.Leader.Host == "" {
				return false
			}
		}
		return true
	})
	t.Cleanup(func() {
		if c, err := kafka.Dial("tcp", net.JoinHostPort(ctrl.Host, strconv.Itoa(ctrl.Port))); err == nil {
			_ = c.DeleteTopics(topic)
			c.Close()
		}
	})
}

// produce writes messages to topic, keyed, with Java's partitioner.
func produce(t *testing.T, brokers, topic string, msgs ...kafka.Message) {
	t.Helper()
	w := &kafka.Writer{Addr: kafka.TCP(brokers), Topic: topic, Transport: &kafka.Transport{}, Balancer: &kafka.Murmur2Balancer{}, RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond}
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatalf("producing to %s: %v", topic, err)
	}
}

func event(id, key string, seq int) kafka.Message {
	return kafka.Message{Key: []byte(key), Value: []byte(fmt.Sprintf(`{"seq":%d}`, seq)),
		Headers: []kafka.Header{{Key: "id", Value: []byte(id)}}}
}

// committed returns the group's committed offset per partition of topic
// (-1 when none).
func committed(t *testing.T, brokers, group, topic string, partitions int) map[int]int64 {
	t.Helper()
	client := &kafka.Client{Addr: kafka.TCP(brokers), Timeout: 10 * time.Second}
	parts := make([]int, partitions)
	for i := range parts {
		parts[i] = i
	}
	res, err := client.OffsetFetch(context.Background(), &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: parts}})
	if err != nil {
		t.Fatalf("fetching offsets of group %s: %v", group, err)
	}
	out := map[int]int64{}
	for _, p := range res.Topics[topic] {
		if p.Error != nil {
			t.Fatalf("offset of %s/%d: %v", topic, p.Partition, p.Error)
		}
		out[p.Partition] = p.CommittedOffset
	}
	return out
}

// waitFor polls cond until it holds or timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func deleteTopic(t *testing.T, brokers, topic string) {
	t.Helper()
	client := &kafka.Client{Addr: kafka.TCP(brokers), Timeout: 10 * time.Second}
	_, _ = client.DeleteTopics(context.Background(), &kafka.DeleteTopicsRequest{Topics: []string{topic}})
}
