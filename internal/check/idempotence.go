package check

import (
	"context"
	"fmt"
)

// idempotence reports whether the producer is idempotent and, when it is,
// that the brokers grant it a producer id (InitProducerId without a
// transactional id, which fences nothing).
func (c *checker) idempotence(ctx context.Context) {
	const name = "idempotent producer"
	id, ok, err := c.prod.IdempotentProducerID(ctx)
	switch {
	case !ok:
		c.pass(name, "enable.idempotence=false: a batch resent after a lost answer may be written twice (in order: at-least-once)")
	case err != nil:
		c.fail(name, err.Error(),
			"grant the relay's principal WRITE on its topics (Kafka 2.8+) or IDEMPOTENT_WRITE on the cluster (older brokers): kafka-acls --add --allow-principal User:<relay> --operation IdempotentWrite --cluster; or set enable.idempotence=false")
	default:
		c.pass(name, fmt.Sprintf("enable.idempotence=true: InitProducerId granted producer id %d; a batch resent after a lost answer is written once", id))
	}
}
