package sink

import (
	"context"

	"github.com/outboxrelay/outboxrelay/internal/kafkabatch"
)

// produceRaw is the at-least-once producer's one way onto the wire: it
// sends batch, one record batch as kafkabatch.Encode writes it, to tp's
// leader with acks=all, and returns the offset the broker gave its first
// record (with DUPLICATE_SEQUENCE_NUMBER too, on brokers that answer a
// resent idempotent batch so). The error is the request's (network, timeout, a layout kafka-go
// cannot route) or the partition's answer, a kafka.Error such as
// NOT_LEADER_OR_FOLLOWER, as kafka-go's Client.Produce reports them, so
// retryable, staleLeader and unknownPartition decide on it as before.
//
// batch is only read until produceRaw returns; the caller reuses it for
// a retry (the same bytes, so an idempotent batch keeps its sequence).
func (p *Producer) produceRaw(ctx context.Context, tp topicPartition, batch []byte) (baseOffset int64, err error) {
	res, err := kafkabatch.ProduceBatch(ctx, p.client, tp.topic, tp.partition, "", batch)
	if err != nil {
		return -1, err
	}
	return res.BaseOffset, res.Error
}
