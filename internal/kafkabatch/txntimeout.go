package kafkabatch

import (
	"context"
	"math"
)

// ResumeAfterTimeout tells, after ErrFenced, the coordinator's abort of a
// transaction that outlived transaction.timeout.ms apart from a takeover
// by another producer with the same transactional.id (KIP-360, KIP-588),
// and in the first case makes the producer usable again: it answers true
// when the coordinator accepted this producer's id and epoch (the
// transaction was aborted, nothing of it is visible to read_committed
// readers; Begin may follow), false when it refused them (another
// producer took over: this one stays fenced).
//
// The question is InitProducerId with the producer's current id and
// epoch. The coordinator's timeout abort bumps the epoch itself and
// remembers the one it replaced; asked with that one, it hands out the
// bumped epoch (TransactionMetadata.prepareIncrementProducerEpoch: the
// expected epoch is the last one). A new producer's InitProducerId
// forgets the last epoch, so after a takeover the same question is
// answered PRODUCER_FENCED. The check is one step at the coordinator.
// TestTxnTimeoutResumed shows both answers on the bed's broker (Kafka
// 4.1); a broker that answers PRODUCER_FENCED in both cases makes every
// timeout a stop, as before KIP-588.
func (p *TxnProducer) ResumeAfterTimeout(ctx context.Context) (bool, error) {
	if p.state != stateFenced || p.producerID < 0 || p.epoch >= math.MaxInt16-1 {
		return false, nil
	}
	was := p.epoch
	err := p.initProducerID(ctx, "InitProducerId after a fencing error (a transaction timeout?)", was)
	if err != nil {
		if classify(err) == classFenced {
			return false, nil
		}
		return false, p.fencedErr("InitProducerId after a fencing error", err)
	}
	p.ready()
	p.log.Info("the coordinator had aborted the transaction for outliving transaction.timeout.ms; the producer goes on with the epoch it answered",
		"producer_id", p.producerID, "epoch", p.epoch, "transaction.timeout.ms", p.cfg.TransactionTimeout.Milliseconds(), "was_epoch", was)
	return true, nil
}
