package sink

import (
	"context"
	"fmt"

	kafka "github.com/segmentio/kafka-go"
)

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
