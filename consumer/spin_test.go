package consumer

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/outboxrelay/outboxrelay/internal/kafkaread/hostile"
	"github.com/outboxrelay/outboxrelay/internal/testbed"
)

// noDB is a DB for runs that must not reach a message.
type noDB struct{ t *testing.T }

func (d noDB) Begin(context.Context) (pgx.Tx, error) {
	d.t.Error("Begin: a message was handled")
	return nil, context.Canceled
}

// runFor runs a consumer of topic t on c for d with spin checks every
// 500 ms and returns its log.
func runFor(t *testing.T, c *kfake.Cluster, d time.Duration) string {
	t.Helper()
	var log testbed.SyncBuffer
	cons, err := New(Config{Name: "g", Brokers: c.ListenAddrs(), Topics: []string{"t"}, Logger: slog.New(slog.NewTextHandler(&log, nil))},
		noDB{t}, func(context.Context, pgx.Tx, Message) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	cons.spinEvery = 500 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := cons.Run(ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
	return log.String()
}

// Regression (issue 27, item 3): a broker answering with a record count
// of -1 (segmentio/kafka-go#1438) made kafka-go's reader fetch the same
// offset in a tight loop (264,526 fetches in 8 s here), reading nothing and
// saying nothing: the consumer stalled silently. It now WARNs, naming the
// bug, while the loop lasts.
func TestConsumerWarnsOfFetchSpin(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	batch, err := hostile.NegativeCountBatch()
	if err != nil {
		t.Fatal(err)
	}
	hostile.Fetches(c, batch)
	if log := runFor(t, c, 5*time.Second); !strings.Contains(log, "segmentio/kafka-go#1438") {
		t.Errorf("no WARN of the fetch loop in 5 s; log:\n%s", log)
	}
}

// TestConsumerIdleIsNoSpin: an idle consumer (an empty topic, a fetch per
// MaxWait) is not taken for a stuck one.
func TestConsumerIdleIsNoSpin(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if log := runFor(t, c, 4*time.Second); strings.Contains(log, "kafka-go#1438") {
		t.Errorf("an idle consumer WARNed of a fetch loop:\n%s", log)
	}
}
