package kafkabatch

import (
	"context"
	"math"
	"time"
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
//
// The question is not free: while another producer's transaction is
// ongoing, the coordinator fences and aborts it before it looks at the
// expected epoch (prepareInitProducerIdTransit), and that producer stops
// as fenced too (seen on the bed: a zombie's question ended the instance
// that had taken over). So it is asked only when the transaction can have
// timed out: it reached the coordinator (a partition was added) at least
// transaction.timeout.ms ago by this producer's clock, which starts
// first. A zombie frozen for less than the timeout never asks; one frozen
// for longer, waking while the new producer has a transaction open, ends
// both (nothing is duplicated or lost; the other instance must be
// started again).
func (p *TxnProducer) ResumeAfterTimeout(ctx context.Context) (bool, error) {
	if p.state != stateFenced || p.producerID < 0 || p.epoch >= math.MaxInt16-1 ||
		len(p.added) == 0 || p.startedAt.IsZero() || time.Since(p.startedAt) < p.cfg.TransactionTimeout {
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
