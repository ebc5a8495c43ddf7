package consumer_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/segmentio/kafka-go"

	"github.com/outboxrelay/outboxrelay/consumer"
	"github.com/outboxrelay/outboxrelay/internal/testbed"
)

// recordApplied is a handler whose side effect is a row in applied.
func recordApplied(schema string) consumer.Handler {
	return func(ctx context.Context, tx pgx.Tx, m consumer.Message) error {
		var v struct{ Seq int }
		if err := json.Unmarshal(m.Value, &v); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO `+schema+`.applied VALUES ($1, $2, $3, $4, $5)`, m.EventID, string(m.Key), v.Seq, m.Partition, m.Offset)
		return err
	}
}

// runConsumer starts c.Run in a goroutine; the returned function cancels
// it and returns Run's error.
func runConsumer(t *testing.T, c *consumer.Consumer) (stop func() error, done <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan error, 1)
	go func() { ch <- c.Run(ctx) }()
	var once sync.Once
	var err error
	t.Cleanup(func() { cancel() })
	return func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-ch:
			case <-time.After(30 * time.Second):
				err = errors.New("Run did not return 30 s after its context was cancelled")
			}
		})
		return err
	}, ch
}

// TestAppliesOnceInOrder: every event is applied once although some come
// twice (as after a relay restart), each key's events in order, and a
// clean stop commits every offset.
func TestAppliesOnceInOrder(t *testing.T) {
	b := newBed(t, 3)
	const events, keys = 300, 10
	var msgs []kafka.Message
	for i := range events {
		msgs = append(msgs, event(fmt.Sprintf("ev-%d", i), fmt.Sprintf("k%d", i%keys), i))
	}
	// Redeliveries: the first 40 events again, after the rest.
	msgs = append(msgs, msgs[:40]...)
	produce(t, b.brokers, b.topic, msgs...)

	c, err := consumer.New(consumer.Config{Name: b.topic, Brokers: []string{b.brokers}, Topics: []string{b.topic},
		ProcessedTable: b.schema + ".processed_events"}, b.pool, recordApplied(b.schema))
	if err != nil {
		t.Fatal(err)
	}
	stop, _ := runConsumer(t, c)
	waitFor(t, 60*time.Second, "all messages handled", func() bool {
		s := c.Stats()
		return s.Applied+s.Duplicates >= int64(len(msgs))
	})
	if err := stop(); err != nil {
		t.Fatalf("Run after a clean stop: %v", err)
	}
	if s := c.Stats(); s.Applied != events || s.Duplicates != 40 {
		t.Errorf("stats %+v; want %d applied, 40 duplicates", s, events)
	}
	var applied, processed int
	ctx := context.Background()
	if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM `+b.schema+`.applied`).Scan(&applied); err != nil {
		t.Fatal(err)
	}
	if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM `+b.schema+`.processed_events WHERE consumer = $1`, b.topic).Scan(&processed); err != nil {
		t.Fatal(err)
	}
	if applied != events || processed != events {
		t.Errorf("%d side effects and %d processed_events rows; want %d each", applied, processed, events)
	}
	// Per key, the side effects happened in the order produced: the
	// offsets of one key's events rise with their sequence numbers.
	var disorder int
	err = b.pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT seq, lag(seq) OVER (PARTITION BY key ORDER BY off) AS prev FROM `+b.schema+`.applied) s WHERE prev > seq`).Scan(&disorder)
	if err != nil || disorder != 0 {
		t.Errorf("%d events applied out of their key's order (%v)", disorder, err)
	}
	end := testbed.EndOffsets(t, b.topic)
	got := committed(t, b.brokers, b.topic, b.topic, 3)
	for p, off := range end {
		if got[p] != off {
			t.Errorf("partition %d: committed offset %d after a clean stop, want the end %d", p, got[p], off)
		}
	}
}

// TestRetryThenStop: a handler that fails twice is retried and applied
// once; one that always fails stops Run with an error naming topic,
// partition, offset and event id, its transaction rolled back and its
// offset not committed.
func TestRetryThenStop(t *testing.T) {
	b := newBed(t, 1)
	produce(t, b.brokers, b.topic, event("flaky", "k", 1), event("poison", "k", 2), event("after", "k", 3))
	var mu sync.Mutex
	fails := map[string]int{}
	base := recordApplied(b.schema)
	handler := func(ctx context.Context, tx pgx.Tx, m consumer.Message) error {
		if err := base(ctx, tx, m); err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		fails[m.EventID]++
		if m.EventID == "poison" || (m.EventID == "flaky" && fails["flaky"] <= 2) {
			return fmt.Errorf("attempt %d of %s failed", fails[m.EventID], m.EventID)
		}
		return nil
	}
	c, err := consumer.New(consumer.Config{Name: b.topic, Brokers: []string{b.brokers}, Topics: []string{b.topic},
		ProcessedTable: b.schema + ".processed_events", MaxAttempts: 3, Backoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond},
		b.pool, handler)
	if err != nil {
		t.Fatal(err)
	}
	_, done := runConsumer(t, c)
	var runErr error
	select {
	case runErr = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("Run did not stop at the poison message")
	}
	var me *consumer.MessageError
	if !errors.As(runErr, &me) || me.Topic != b.topic || me.Partition != 0 || me.Offset != 1 || me.EventID != "poison" || me.Attempts != 3 {
		t.Fatalf("Run returned %v; want a *MessageError for %s/0 at offset 1, event poison, 3 attempts", runErr, b.topic)
	}
	for _, want := range []string{b.topic + "/0", "offset 1", "event id poison", "attempt 3 of poison failed"} {
		if !strings.Contains(runErr.Error(), want) {
			t.Errorf("error %q does not say %q", runErr, want)
		}
	}
	if s := c.Stats(); s.Applied != 1 || s.Retries != 4 {
		t.Errorf("stats %+v; want 1 applied (flaky), 4 retries (2 flaky, 2 poison)", s)
	}
	var ids []string
	rows, _ := b.pool.Query(context.Background(), `SELECT event_id FROM `+b.schema+`.processed_events UNION ALL SELECT event_id FROM `+b.schema+`.applied ORDER BY 1`)
	ids, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || strings.Join(ids, ",") != "flaky,flaky" {
		t.Errorf("rows %v (%v); want flaky in processed_events and applied, nothing of poison", ids, err)
	}
	if got := committed(t, b.brokers, b.topic, b.topic, 1)[0]; got != 1 {
		t.Errorf("committed offset %d; want 1 (flaky done, poison to be read again)", got)
	}
}

// TestDeadLetter: with a dead-letter topic, a message that keeps failing
// and one without an event id go there with headers saying why, and the
// consumer goes on.
func TestDeadLetter(t *testing.T) {
	b := newBed(t, 1)
	dlq := b.topic + ".dlq"
	t.Cleanup(func() { deleteTopic(t, b.brokers, dlq) })
	noID := kafka.Message{Key: []byte("k"), Value: []byte(`{"seq":2}`)}
	produce(t, b.brokers, b.topic, event("poison", "k", 1), noID, event("good", "k", 3))
	base := recordApplied(b.schema)
	handler := func(ctx context.Context, tx pgx.Tx, m consumer.Message) error {
		if m.EventID == "poison" {
			return errors.New("cannot apply poison")
		}
		return base(ctx, tx, m)
	}
	c, err := consumer.New(consumer.Config{Name: b.topic, Brokers: []string{b.brokers}, Topics: []string{b.topic},
		ProcessedTable: b.schema + ".processed_events", MaxAttempts: 2, Backoff: 10 * time.Millisecond, DeadLetterTopic: dlq},
		b.pool, handler)
	if err != nil {
		t.Fatal(err)
	}
	stop, _ := runConsumer(t, c)
	waitFor(t, 60*time.Second, "the good event applied", func() bool { return c.Stats().Applied == 1 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if s := c.Stats(); s.DeadLettered != 2 {
		t.Errorf("stats %+v; want 2 dead letters", s)
	}
	got := testbed.Consume(t, dlq, nil, 2, 30*time.Second, 500*time.Millisecond)
	if len(got) != 2 {
		t.Fatalf("%d dead letters, want 2", len(got))
	}
	want := []map[string]string{{
		"id": "poison", "__connect.errors.topic": b.topic, "__connect.errors.partition": "0", "__connect.errors.offset": "0",
		"__connect.errors.connector.name": b.topic, "__connect.errors.stage": "TASK_PUT", "__outboxrelay.event.id": "poison",
		"__outboxrelay.attempts": "2", "__connect.errors.exception.message": "handler: cannot apply poison",
		"__connect.errors.exception.class.name": "*errors.errorString",
	}, {
		"__connect.errors.topic": b.topic, "__connect.errors.offset": "1", "__outboxrelay.attempts": "0",
		"__connect.errors.exception.message": `the message has no event-id header "id"; the relay always sets it, so check Config.IDHeader and who wrote this message`,
	}}
	for i, m := range got {
		h := map[string]string{}
		for _, x := range m.Headers {
			h[x.Key] = string(x.Value)
		}
		for k, v := range want[i] {
			if h[k] != v {
				t.Errorf("dead letter %d: header %s = %q, want %q", i, k, h[k], v)
			}
		}
		if string(m.Key) != "k" {
			t.Errorf("dead letter %d: key %q, want the original k", i, m.Key)
		}
	}
	if string(got[0].Value) != `{"seq":1}` {
		t.Errorf("dead letter value %q, want the original", got[0].Value)
	}
}

// TestNoEventIDStops: without a dead-letter topic a message without the id
// header stops Run with ErrNoEventID; the header name is configurable.
func TestNoEventIDStops(t *testing.T) {
	b := newBed(t, 1)
	produce(t, b.brokers, b.topic, kafka.Message{Key: []byte("k"), Value: []byte(`{"seq":1}`),
		Headers: []kafka.Header{{Key: "event_id", Value: []byte("42")}, {Key: "id", Value: []byte("other")}}},
		kafka.Message{Key: []byte("k"), Value: []byte(`{"seq":2}`), Headers: []kafka.Header{{Key: "id", Value: []byte("43")}}})
	c, err := consumer.New(consumer.Config{Name: b.topic, Brokers: []string{b.brokers}, Topics: []string{b.topic},
		ProcessedTable: b.schema + ".processed_events", IDHeader: "event_id"}, b.pool, recordApplied(b.schema))
	if err != nil {
		t.Fatal(err)
	}
	_, done := runConsumer(t, c)
	var runErr error
	select {
	case runErr = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("Run did not stop at the message without event_id")
	}
	var me *consumer.MessageError
	if !errors.Is(runErr, consumer.ErrNoEventID) || !errors.As(runErr, &me) || me.Offset != 1 || !strings.Contains(runErr.Error(), `"event_id"`) {
		t.Fatalf("Run returned %v; want ErrNoEventID at offset 1 naming the header event_id", runErr)
	}
	var id string
	if err := b.pool.QueryRow(context.Background(), `SELECT event_id FROM `+b.schema+`.applied`).Scan(&id); err != nil || id != "42" {
		t.Errorf("applied %q (%v); want the event_id header's 42", id, err)
	}
}

func TestDeleteProcessed(t *testing.T) {
	b := newBed(t, 1)
	table := b.schema + ".processed_events"
	testbed.Exec(t, testbed.Admin(t),
		`INSERT INTO `+table+` SELECT 'c', 'old-'||i, now() - interval '9 days' FROM generate_series(1, 12000) i`,
		`INSERT INTO `+table+` SELECT 'c', 'new-'||i, now() - interval '1 day' FROM generate_series(1, 5) i`,
		`INSERT INTO `+table+` SELECT 'other', 'old-'||i, now() - interval '9 days' FROM generate_series(1, 3) i`)
	n, err := consumer.DeleteProcessed(context.Background(), b.pool, table, "c", 8*24*time.Hour)
	if err != nil || n != 12000 {
		t.Fatalf("DeleteProcessed = %d, %v; want 12000 (two batches)", n, err)
	}
	var left int
	if err := b.pool.QueryRow(context.Background(), `SELECT count(*) FROM `+table).Scan(&left); err != nil || left != 8 {
		t.Errorf("%d rows left (%v); want 8: the recent ones and the other consumer's", left, err)
	}
	if _, err := consumer.DeleteProcessed(context.Background(), b.pool, table, "c", 0); err == nil {
		t.Error("DeleteProcessed with olderThan 0 succeeded; want an error")
	}
}

// TestExamples runs the example that needs the bed.
func TestExamples(t *testing.T) {
	if got, want := testbed.RunExample(t, Example), "points 42, applied 1, duplicates 1\n"; got != want {
		t.Errorf("Example printed %q, want %q", got, want)
	}
	want := "trace 4bf92f3577b34da6a3ce929d0e0e4736, parent 00f067aa0ba902b7, duplicate false\n" +
		"trace 4bf92f3577b34da6a3ce929d0e0e4736, parent 00f067aa0ba902b7, duplicate true\n"
	if got := testbed.RunExample(t, Example_tracing); got != want {
		t.Errorf("Example_tracing printed %q, want %q", got, want)
	}
}

// TestTopicCreatedAfterStart pins a bug: a consumer started before the
// relay had created its topic joined the group with no partitions and
// never consumed anything, not even after the topic appeared.
func TestTopicCreatedAfterStart(t *testing.T) {
	b := newBed(t, 1)
	topic := b.topic + ".later"
	c, err := consumer.New(consumer.Config{Name: b.topic, Brokers: []string{b.brokers}, Topics: []string{topic},
		ProcessedTable: b.schema + ".processed_events"}, b.pool, recordApplied(b.schema))
	if err != nil {
		t.Fatal(err)
	}
	stop, _ := runConsumer(t, c)
	time.Sleep(2 * time.Second) // the consumer is up before the topic
	createTopic(t, b.brokers, topic, 2)
	produce(t, b.brokers, topic, event("a", "k1", 1), event("b", "k2", 2))
	waitFor(t, 60*time.Second, "both events applied", func() bool { return c.Stats().Applied == 2 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}
