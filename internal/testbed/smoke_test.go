package testbed_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/segmentio/kafka-go"

	"github.com/outboxrelay/outboxrelay/internal/kafkaread"
	"github.com/outboxrelay/outboxrelay/internal/testbed"
)

// TestPostgresLogicalReplication proves the bed's PostgreSQL streams pgoutput
// to the least-privilege relay role: a slot on a publication, one INSERT,
// and its Insert message read back with pglogrepl.
func TestPostgresLogicalReplication(t *testing.T) {
	dsn := testbed.Postgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connecting as superuser: %v", err)
	}
	defer admin.Close(context.Background())

	name := fmt.Sprintf("smoke_%d", time.Now().UnixNano())
	exec := func(sql string) {
		t.Helper()
		if _, err := admin.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	exec(fmt.Sprintf(`CREATE TABLE %s (id bigint PRIMARY KEY, body jsonb NOT NULL)`, name))
	exec(fmt.Sprintf(`CREATE PUBLICATION %s FOR TABLE %s`, name, name))
	t.Cleanup(func() {
		bg := context.Background()
		_, _ = admin.Exec(bg, fmt.Sprintf(`SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = '%s'`, name))
		_, _ = admin.Exec(bg, fmt.Sprintf(`DROP PUBLICATION IF EXISTS %s`, name))
		_, _ = admin.Exec(bg, fmt.Sprintf(`DROP TABLE IF EXISTS %s`, name))
	})

	repl, err := pgconn.Connect(ctx, relayDSN(t, dsn)+"&replication=database")
	if err != nil {
		t.Fatalf("replication connection as the relay role: %v", err)
	}
	defer repl.Close(context.Background())

	slot, err := pglogrepl.CreateReplicationSlot(ctx, repl, name, "pgoutput",
		pglogrepl.CreateReplicationSlotOptions{Mode: pglogrepl.LogicalReplication})
	if err != nil {
		t.Fatalf("creating slot: %v", err)
	}
	start, err := pglogrepl.ParseLSN(slot.ConsistentPoint)
	if err != nil {
		t.Fatalf("parsing consistent point %q: %v", slot.ConsistentPoint, err)
	}
	err = pglogrepl.StartReplication(ctx, repl, name, start, pglogrepl.StartReplicationOptions{
		PluginArgs: []string{"proto_version '1'", fmt.Sprintf("publication_names '%s'", name)},
	})
	if err != nil {
		t.Fatalf("starting replication: %v", err)
	}
	exec(fmt.Sprintf(`INSERT INTO %s VALUES (42, '{"a": 1}')`, name))

	rel := map[uint32]*pglogrepl.RelationMessage{}
	for {
		msg, err := repl.ReceiveMessage(ctx)
		if err != nil {
			t.Fatalf("receiving WAL: %v", err)
		}
		cd, ok := msg.(*pgproto3.CopyData)
		if !ok || len(cd.Data) == 0 || cd.Data[0] != pglogrepl.XLogDataByteID {
			continue
		}
		xld, err := pglogrepl.ParseXLogData(cd.Data[1:])
		if err != nil {
			t.Fatalf("parsing XLogData: %v", err)
		}
		m, err := pglogrepl.Parse(xld.WALData)
		if err != nil {
			t.Fatalf("parsing pgoutput: %v", err)
		}
		switch m := m.(type) {
		case *pglogrepl.RelationMessage:
			rel[m.RelationID] = m
		case *pglogrepl.InsertMessage:
			r := rel[m.RelationID]
			if r == nil || r.RelationName != name {
				t.Fatalf("insert for unknown relation %d", m.RelationID)
			}
			got := map[string]string{}
			for i, c := range m.Tuple.Columns {
				got[r.Columns[i].Name] = string(c.Data)
			}
			if got["id"] != "42" || got["body"] != `{"a": 1}` {
				t.Fatalf("insert decoded as %v; want id=42 body={\"a\": 1}", got)
			}
			return
		}
	}
}

// relayDSN turns the superuser DSN into the least-privilege role's.
func relayDSN(t *testing.T, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("parsing %s: %v", testbed.EnvPostgresURL, err)
	}
	u.User = url.UserPassword("debezium", "debezium@123")
	return u.String()
}

// TestKafkaCreateProduceFetch proves kafka-go talks to the bed's Kafka 4
// broker on the three APIs the relay uses: CreateTopics, Produce with
// acks=all, and Fetch.
func TestKafkaCreateProduceFetch(t *testing.T) {
	brokers := testbed.KafkaBrokers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	topic := fmt.Sprintf("smoke-%d", time.Now().UnixNano())
	client := &kafka.Client{Addr: kafka.TCP(brokers), Timeout: 10 * time.Second}
	res, err := client.CreateTopics(ctx, &kafka.CreateTopicsRequest{
		Topics: []kafka.TopicConfig{{Topic: topic, NumPartitions: 3, ReplicationFactor: 1}},
	})
	if err != nil {
		t.Fatalf("CreateTopics: %v", err)
	}
	if err := res.Errors[topic]; err != nil {
		t.Fatalf("CreateTopics %s: %v", topic, err)
	}
	t.Cleanup(func() {
		_, _ = client.DeleteTopics(context.Background(), &kafka.DeleteTopicsRequest{Topics: []string{topic}})
	})

	w := &kafka.Writer{
		Addr:         kafka.TCP(brokers),
		Topic:        topic,
		RequiredAcks: kafka.RequireAll,
		Balancer:     &kafka.Murmur2Balancer{},
		BatchTimeout: time.Millisecond,
	}
	defer w.Close()
	const n = 30
	msgs := make([]kafka.Message, n)
	for i := range msgs {
		msgs[i] = kafka.Message{
			Key:     []byte("agg-1"),
			Value:   []byte(fmt.Sprintf(`{"n":%d}`, i)),
			Headers: []kafka.Header{{Key: "id", Value: []byte(fmt.Sprint(i))}},
		}
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatalf("Produce (acks=all): %v", err)
	}

	// One key: every record is on one partition, in the order written.
	part := msgs[0].Partition
	got, err := kafkaread.Reader{Broker: brokers}.Partition(ctx, topic, part, 0)
	if err != nil {
		t.Fatalf("Fetch from partition %d: %v", part, err)
	}
	if len(got) != n {
		t.Fatalf("partition %d holds %d records, want %d", part, len(got), n)
	}
	for i, m := range got {
		if want := fmt.Sprintf(`{"n":%d}`, i); string(m.Value) != want || string(m.Key) != "agg-1" {
			t.Fatalf("record %d: key %q value %q; want agg-1 %s", i, m.Key, m.Value, want)
		}
		if len(m.Headers) != 1 || m.Headers[0].Key != "id" || !strings.EqualFold(string(m.Headers[0].Value), fmt.Sprint(i)) {
			t.Fatalf("record %d: headers %v", i, m.Headers)
		}
	}
}
