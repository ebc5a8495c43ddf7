package kafkabatch

import (
	"context"
	"errors"
	"fmt"
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
// producer took over: this one stays fenced), or when the question is not
// asked (below). An error is neither answer (the coordinator could not be
// reached before ctx ended): the producer stays fenced, and may ask again.
//
// The question is InitProducerId with the producer's current id and
// epoch. Observed on Kafka 4.1.1 (TestTxnTimeoutResumed; this producer
// speaks transactions version 1, kafka-go's EndTxn stopping at v3): after
// its own timeout abort the coordinator accepts them and answers a later
// epoch, after a takeover it answers PRODUCER_FENCED. The broker source
// read (trunk of 2024-10) suggests PRODUCER_FENCED in both cases; other
// versions may refuse, and then every timeout stops as fenced, as before
// KIP-588: safe (a stop, never a duplicate). Whatever epoch is answered,
// the producer numbers sequences from 0 in it.
//
// The question is not free: while another producer's transaction is
// ongoing, the coordinator fences and aborts it before it looks at the
// expected epoch (prepareInitProducerIdTransit), and that producer stops
// as fenced too (seen on the bed: a zombie's question ended the instance
// that had taken over). So it is asked only when the transaction can have
// timed out: it reached the coordinator (a partition was added) at least
// transaction.timeout.ms ago by this producer's monotonic clock, which
// starts first. That clock stops during a host or VM suspend, so a
// transaction that timed out across one looks young and stops as fenced:
// the safe direction. The caller asks only while it holds the right to
// write (sink: the failover lock): a zombie frozen past the timeout no
// longer holds it. An epoch at its maximum is not asked either
// (ErrEpochExhausted: the coordinator would hand out a new producer id).
func (p *TxnProducer) ResumeAfterTimeout(ctx context.Context) (bool, error) {
	if p.state != stateFenced || p.producerID < 0 || len(p.added) == 0 || p.startedAt.IsZero() ||
		time.Since(p.startedAt) < p.cfg.TransactionTimeout {
		return false, nil
	}
	if p.epoch >= math.MaxInt16-1 {
		return false, fmt.Errorf("kafkabatch: InitProducerId after a fencing error (producer id %d, epoch %d): %w", p.producerID, p.epoch, ErrEpochExhausted)
	}
	was := p.epoch
	err := p.initProducerID(ctx, "InitProducerId after a fencing error (a transaction timeout?)", was)
	if err != nil {
		if classify(err) == classFenced {
			return false, nil
		}
		return false, fmt.Errorf("kafkabatch: InitProducerId after a fencing error (transactional.id %q, producer id %d, epoch %d): %w", p.cfg.TransactionalID, p.producerID, was, err)
	}
	p.ready()
	p.log.Info("the coordinator had aborted the transaction for outliving transaction.timeout.ms; the producer goes on with the epoch it answered",
		"producer_id", p.producerID, "epoch", p.epoch, "transaction.timeout.ms", p.cfg.TransactionTimeout.Milliseconds(), "was_epoch", was)
	return true, nil
}

// ErrEpochExhausted: the producer's epoch is at its maximum, so
// ResumeAfterTimeout cannot tell a timeout from a takeover; a new
// producer (Init at a new session) gets a new producer id.
var ErrEpochExhausted = errors.New("kafkabatch: the producer epoch is exhausted; a new producer id is needed")
