package sink

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/outboxrelay/outboxrelay/internal/kafkabatch"
)

// What the exactly-once sink (sink/exactlyonce) and check use of a
// Producer besides Send: its configuration, a transactional producer on
// its connections, partition counts, the coordinator and the brokers.

// Config is the configuration p was made with, its defaults applied.
func (p *Producer) Config() Config { return p.cfg }

// TxnProducer makes a transactional producer (kafkabatch.TxnProducer)
// for transactionalID on p's client and configuration; it keeps its own
// connection to the transaction coordinator, dialed as p's are (TLS,
// SASL). It does not connect.
func (p *Producer) TxnProducer(transactionalID string, timeout time.Duration, log *slog.Logger) (*kafkabatch.TxnProducer, error) {
	txn, err := kafkabatch.NewTxnProducer(p.client, kafkabatch.TxnProducerConfig{TransactionalID: transactionalID, TransactionTimeout: timeout,
		Compression: kafkabatch.Compression(p.cfg.Compression), RetryBackoff: p.cfg.RetryBackoff, RetryBackoffMax: p.cfg.RetryBackoffMax,
		MaxRequestSize: p.cfg.MaxRequestSize, Dial: p.dialBroker}, log)
	if err != nil {
		return nil, fmt.Errorf("sink: %w", err)
	}
	return txn, nil
}

// PartitionCount is topic's partition count, read from the cluster; it
// never creates the topic (EnsureTopic does).
func (p *Producer) PartitionCount(ctx context.Context, topic string) (int, error) {
	return p.partitionCount(ctx, topic, false)
}

// TransactionCoordinator finds the transaction coordinator of
// transactionalID (FindCoordinator), which needs DESCRIBE on the
// transactional id; it does not touch the transaction, so a running relay
// with that id is not fenced. It returns the coordinator's address.
func (p *Producer) TransactionCoordinator(ctx context.Context, transactionalID string) (string, error) {
	res, err := p.client.FindCoordinator(ctx, &kafka.FindCoordinatorRequest{Key: transactionalID, KeyType: kafka.CoordinatorKeyTypeTransaction})
	if err != nil {
		return "", err
	}
	if res.Error != nil {
		return "", res.Error
	}
	if res.Coordinator == nil {
		return "", fmt.Errorf("no coordinator in the answer")
	}
	return fmt.Sprintf("%s:%d (broker %d)", res.Coordinator.Host, res.Coordinator.Port, res.Coordinator.NodeID), nil
}

// Brokers counts the brokers of the cluster.
func (p *Producer) Brokers(ctx context.Context) (int, error) {
	md, err := p.client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{}})
	if err != nil {
		return 0, err
	}
	return len(md.Brokers), nil
}
