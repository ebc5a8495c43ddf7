package check

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	kafka "github.com/segmentio/kafka-go"

	"github.com/outboxrelay/outboxrelay/internal/setup"
	"github.com/outboxrelay/outboxrelay/sink/exactlyonce"
)

// exactlyOnce checks what exactly.once.support=required needs of Kafka:
// the broker's transaction state log, the transactional id's ACLs, and the
// offsets topic each transaction writes its position to.
func (c *checker) exactlyOnce(ctx context.Context, e exactlyonce.Config, o setup.OffsetsConfig) {
	brokers, err := c.prod.Brokers(ctx)
	if err != nil {
		c.fail("Kafka transactions", "listing the brokers: "+err.Error(), "check the connection to Kafka")
		return
	}
	rf, err1 := c.prod.BrokerConfig(ctx, "transaction.state.log.replication.factor")
	isr, err2 := c.prod.BrokerConfig(ctx, "transaction.state.log.min.isr")
	maxTimeout, err3 := c.prod.BrokerConfig(ctx, "transaction.max.timeout.ms")
	if err := errors.Join(err1, err2, err3); err != nil {
		c.fail("Kafka transactions", "reading the brokers' transaction settings: "+err.Error(), "grant the principal DESCRIBE_CONFIGS on the cluster, so that the check can read them")
		c.offsetsTopic(ctx, o)
		return
	}
	n, _ := strconv.Atoi(rf)
	m, _ := strconv.Atoi(isr)
	detail := fmt.Sprintf("transaction.state.log.replication.factor=%s, transaction.state.log.min.isr=%s, %d brokers", rf, isr, brokers)
	switch {
	case n > brokers:
		c.fail("Kafka transactions", detail, fmt.Sprintf("the coordinator cannot create __transaction_state with %d replicas on %d brokers: lower transaction.state.log.replication.factor on the brokers, or add brokers", n, brokers))
	case m > brokers:
		c.fail("Kafka transactions", detail, "transaction.state.log.min.isr exceeds the brokers: no transaction can commit; lower it")
	case timeoutTooLong(e, maxTimeout):
		c.fail("Kafka transactions", fmt.Sprintf("transaction.timeout.ms=%d, the brokers' transaction.max.timeout.ms=%s", e.Timeout.Milliseconds(), maxTimeout),
			"InitProducerId would fail (INVALID_TRANSACTION_TIMEOUT): lower transaction.timeout.ms, or raise transaction.max.timeout.ms on the brokers")
	default:
		c.pass("Kafka transactions", detail)
	}
	coord, err := c.prod.TransactionCoordinator(ctx, e.TransactionalID)
	switch {
	case errors.Is(err, kafka.TransactionalIDAuthorizationFailed):
		c.fail("transactional.id ACLs", fmt.Sprintf("transactional.id %q: %v", e.TransactionalID, err),
			fmt.Sprintf("grant the relay's principal WRITE and DESCRIBE on it: kafka-acls --add --allow-principal User:<relay> --operation Write --operation Describe --transactional-id %s", e.TransactionalID))
	case err != nil:
		c.fail("transactional.id ACLs", fmt.Sprintf("finding the transaction coordinator of %q: %v", e.TransactionalID, err), "check that the brokers support transactions (Kafka 0.11+) and are healthy")
	default:
		c.pass("transactional.id ACLs", fmt.Sprintf("DESCRIBE on %q allowed (coordinator %s); WRITE is checked at the first start, by InitProducerId, which a check must not send: it would fence a running relay", e.TransactionalID, coord))
	}
	c.offsetsTopic(ctx, o)
}

// timeoutTooLong says whether transaction.timeout.ms exceeds the brokers'
// transaction.max.timeout.ms (read as text; unreadable: not known too long).
func timeoutTooLong(e exactlyonce.Config, maxTimeout string) bool {
	ms, err := strconv.ParseInt(maxTimeout, 10, 64)
	return err == nil && e.Timeout.Milliseconds() > ms
}

// offsetsTopic checks that the offsets topic, when it exists, is compacted.
func (c *checker) offsetsTopic(ctx context.Context, o setup.OffsetsConfig) {
	policy, err := c.prod.TopicConfig(ctx, o.Topic, "cleanup.policy")
	switch {
	case errors.Is(err, kafka.UnknownTopicOrPartition):
		c.pass("offsets topic", fmt.Sprintf("%s does not exist yet; the relay creates it compacted, one partition", o.Topic))
	case err != nil:
		c.fail("offsets topic", fmt.Sprintf("%s: %v", o.Topic, err), "grant the principal DESCRIBE_CONFIGS, READ and WRITE on the offsets topic")
	case policy != "compact":
		c.fail("offsets topic", fmt.Sprintf("%s has cleanup.policy=%s", o.Topic, policy),
			fmt.Sprintf("the position must never expire: kafka-configs --alter --entity-type topics --entity-name %s --add-config cleanup.policy=compact", o.Topic))
	default:
		c.pass("offsets topic", fmt.Sprintf("%s, cleanup.policy=compact", o.Topic))
	}
}
