package check

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/outboxrelay/outboxrelay/sink"
)

// idempotenceAttempts: how often check asks for a producer id when the
// answer is one the relay would retry (a broker just started, a timeout).
const idempotenceAttempts = 3

// idempotence reports whether the producer is idempotent and, when it is,
// that the brokers grant it a producer id (InitProducerId without a
// transactional id, which fences nothing). Only an authorization refusal
// is reported as a missing ACL; an answer the relay would retry is asked
// again a few times, then reported as what it is.
func (c *checker) idempotence(ctx context.Context) {
	const name = "idempotent producer"
	what := "the at-least-once producer"
	if c.eos {
		what = "the dead-letter producer (records go in Kafka transactions, checked below)"
	}
	id, ok, err := c.prod.IdempotentProducerID(ctx)
	for i := 1; err != nil && sink.Retriable(err) && i < idempotenceAttempts && pause(ctx, time.Duration(i)*500*time.Millisecond); i++ {
		id, ok, err = c.prod.IdempotentProducerID(ctx)
	}
	switch {
	case !ok:
		c.pass(name, "enable.idempotence=false: a batch resent after a lost answer may be written twice (in order: at-least-once)")
	case errors.Is(err, sink.ErrIdempotenceRefused):
		c.fail(name, "the brokers refuse "+what+" a producer id: InitProducerId answered CLUSTER_AUTHORIZATION_FAILED",
			"grant the relay's principal WRITE on its topics (Kafka 2.8+) or IDEMPOTENT_WRITE on the cluster (older brokers): kafka-acls --add --allow-principal User:<relay> --operation IdempotentWrite --cluster; or set enable.idempotence=false")
	case err != nil && sink.Retriable(err):
		c.fail(name, fmt.Sprintf("no producer id for %s after %d attempts: %v", what, idempotenceAttempts, err),
			"a broker that has just started answers COORDINATOR_LOAD_IN_PROGRESS or COORDINATOR_NOT_AVAILABLE until it is ready, and the relay waits for it; run check again, and if it persists see the brokers' logs")
	case err != nil:
		c.fail(name, fmt.Sprintf("no producer id for %s: %v", what, err),
			"the brokers do not grant the idempotent producer an id; set enable.idempotence=false to produce without one (a batch resent after a lost answer may then be written twice)")
	default:
		c.pass(name, fmt.Sprintf("enable.idempotence=true: InitProducerId granted %s producer id %d; a batch resent after a lost answer is written once", what, id))
	}
}

// pause waits d; false when ctx ends first.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
