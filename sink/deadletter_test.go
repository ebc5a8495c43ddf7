package sink

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

func TestDeadLetter(t *testing.T) {
	_, addr := newCluster(t)
	cfg := fastConfig(addr)
	cfg.DeadLetterTopic = "outbox.dlq"
	p := newTestProducer(t, cfg)
	a := newAcks()
	orig := Record{Topic: "outbox.event.order", Partition: -1, Key: []byte("9191642889"), Value: []byte(`{"x":1}`),
		Headers: []Header{{Key: "id", Value: []byte("ev-1")}}, EventID: "ev-1"}
	cause := &RecordError{Topic: orig.Topic, Partition: -1, EventID: "ev-1", Err: ErrTopicMissing}
	meta := DLQMeta{LSN: "0/16B3748", SourceTable: "public.outbox", ConnectorName: "orders-outbox", Stage: "KAFKA_PRODUCE"}
	if err := p.DeadLetter(context.Background(), orig, cause, meta, a.cb("dlq")); err != nil {
		t.Fatal(err)
	}
	flush(t, p, 10*time.Second)
	if err := a.err("dlq"); err != nil {
		t.Fatalf("dead letter not delivered: %v", err)
	}
	got := readTopic(t, []string{addr}, "outbox.dlq")
	if len(got) != 1 || len(got[0]) != 1 {
		t.Fatalf("dead-letter topic holds %v, want one record in its one partition", got)
	}
	m := got[0][0]
	if string(m.Key) != "9191642889" || string(m.Value) != `{"x":1}` {
		t.Fatalf("key %q value %q", m.Key, m.Value)
	}
	h := map[string]string{}
	for _, x := range m.Headers {
		h[x.Key] = string(x.Value)
	}
	want := map[string]string{
		"id":                                    "ev-1",
		"__connect.errors.topic":                "outbox.event.order",
		"__connect.errors.connector.name":       "orders-outbox",
		"__connect.errors.task.id":              "0",
		"__connect.errors.stage":                "KAFKA_PRODUCE",
		"__connect.errors.exception.class.name": "*errors.errorString",
		"__connect.errors.exception.message":    cause.Error(),
		"__outboxrelay.lsn":                     "0/16B3748",
		"__outboxrelay.source.table":            "public.outbox",
		"__outboxrelay.event.id":                "ev-1",
	}
	for k, v := range want {
		if h[k] != v {
			t.Errorf("header %s = %q, want %q", k, h[k], v)
		}
	}
	if _, err := newTestProducer(t, fastConfig(addr)).EnsureTopic(context.Background(), "outbox.dlq"); err != nil {
		t.Fatal(err)
	}
}

func TestDeadLetterWithoutTopic(t *testing.T) {
	_, addr := newCluster(t, kfake.SeedTopics(1, "x"))
	p := newTestProducer(t, fastConfig(addr))
	if err := p.DeadLetter(context.Background(), Record{Topic: "x"}, nil, DLQMeta{}, func(error) {}); err != ErrNoDeadLetterTopic {
		t.Fatalf("got %v", err)
	}
}
