package sink

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/outboxrelay/outboxrelay/router"
)

func TestDeadLetter(t *testing.T) {
	_, addr := newCluster(t)
	cfg := fastConfig(addr)
	cfg.DeadLetterTopic = "outbox.dlq"
	p := newTestProducer(t, cfg)
	a := newAcks()
	orig := router.Record{Topic: "outbox.event.order", Partition: -1, Key: []byte("9191642889"), Value: []byte(`{"x":1}`),
		Headers: []router.Header{{Key: "id", Value: []byte("ev-1")}}, EventID: "ev-1"}
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
		"__connect.errors.exception.class.name": "sink.ErrTopicMissing",
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
	if err := p.DeadLetter(context.Background(), router.Record{Topic: "x"}, nil, DLQMeta{}, func(error) {}); err != ErrNoDeadLetterTopic {
		t.Fatalf("got %v", err)
	}
}

// typedErr is an error type of no standard library package.
type typedErr struct{}

func (typedErr) Error() string { return "typed" }

// TestErrorClass pins __connect.errors.exception.class.name. Regression: a
// record refused as too large read "*fmt.wrapErrors", because the relay
// wraps the sink's error with two %w and errors.Unwrap stops there.
func TestErrorClass(t *testing.T) {
	// As the relay builds it: Send's *RecordError wrapping
	// ErrRecordTooLarge, marked rejected with a second %w, then wrapped
	// with the event it was sending.
	rejected := errors.New("record rejected") // replication.ErrRecordRejected
	tooLarge := &RecordError{Topic: "orders", Partition: -1, EventID: "42",
		Err: fmt.Errorf("%w: %d bytes serialized (at most), %s is %d", ErrRecordTooLarge, 1100230, KeyMaxRequestSize, 1<<20)}
	relayTooLarge := fmt.Errorf("sending event 42 (LSN 0/16B3748, table public.outbox) to orders: %w",
		fmt.Errorf("%w: %w", rejected, tooLarge))
	nullRoute := &router.RowError{LSN: 0x16B3748, Table: "public.outbox", EventID: "42", Column: "aggregatetype",
		ConfigKey: "transforms.outbox.route.by.field", Reason: "the route value is NULL, so the row has no topic"}

	tests := []struct {
		name string
		err  error
		want string
	}{
		{"too large, as the relay wraps it", relayTooLarge, "sink.ErrRecordTooLarge"},
		{"too large, as Send returns it", tooLarge, "sink.ErrRecordTooLarge"},
		{"NULL route value", nullRoute, "*router.RowError"},
		{"row error wrapped twice", fmt.Errorf("a: %w", fmt.Errorf("%w: %w", rejected, nullRoute)), "*router.RowError"},
		{"topic missing", &RecordError{Err: ErrTopicMissing}, "sink.ErrTopicMissing"},
		{"partition gone", &RecordError{Err: fmt.Errorf("%w: 3", ErrNoSuchPartition)}, "sink.ErrNoSuchPartition"},
		{"closed", fmt.Errorf("x: %w", ErrClosed), "sink.ErrClosed"},
		{"broker code", fmt.Errorf("%w: %w", rejected, &RecordError{Err: kafka.MessageSizeTooLarge}), "kafka.Error(10)"},
		{"joined", errors.Join(errors.New("a"), fmt.Errorf("b: %w", typedErr{})), "sink.typedErr"},
		{"deepest typed wins", &RecordError{Err: fmt.Errorf("w: %w", typedErr{})}, "sink.typedErr"},
		{"only plain text", fmt.Errorf("a: %w", errors.New("b")), "*errors.errorString"},
		{"plain text, two %w", fmt.Errorf("%w: %w", errors.New("a"), errors.New("b")), "*errors.errorString"},
		{"nil", nil, "<nil>"},
	}
	for _, tt := range tests {
		if got := errorClass(tt.err); got != tt.want {
			t.Errorf("%s: errorClass = %q, want %q", tt.name, got, tt.want)
		}
	}
}
