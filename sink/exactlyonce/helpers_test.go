package exactlyonce

import (
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
	"github.com/outboxrelay/outboxrelay/sink"
)

func testLogger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// txnBedProducer is a producer on the bed's Kafka that creates topics of
// one partition, with short backoffs, for the sink's bed tests.
func txnBedProducer(t *testing.T) *sink.Producer {
	t.Helper()
	p, err := sink.NewProducer(sink.Config{
		Brokers:         strings.Split(testbed.KafkaBrokers(t), ","),
		Linger:          2 * time.Millisecond,
		RetryBackoff:    5 * time.Millisecond,
		RetryBackoffMax: 50 * time.Millisecond,
		RequestTimeout:  5 * time.Second,
		TopicPartitions: 1, TopicReplicationFactor: -1,
	}, testLogger(t))
	if err != nil {
		t.Fatalf("NewProducer: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// bedClient is a client of p's brokers with a transport of its own (the
// shared default transport's metadata cache may predate a topic the test
// just created), to read what the sink committed, and what closes its
// connections.
func bedClient(p *sink.Producer) (*kafka.Client, func()) {
	tr := &kafka.Transport{}
	return &kafka.Client{Addr: kafka.TCP(p.Config().Brokers...), Timeout: 5 * time.Second, Transport: tr}, tr.CloseIdleConnections
}

// acks records each record's ack by event id.
type acks struct {
	mu   sync.Mutex
	errs map[string]error
}

func newAcks() *acks { return &acks{errs: map[string]error{}} }

func (a *acks) cb(id string) func(error) {
	return func(err error) {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.errs[id] = err
	}
}

func (a *acks) err(id string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.errs[id]
}
