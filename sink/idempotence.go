package sink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"

	kafka "github.com/segmentio/kafka-go"

	"github.com/outboxrelay/outboxrelay/internal/kafkabatch"
)

// errIdempotenceRefused marks the brokers' refusal of the idempotent
// producer (InitProducerId or an idempotent produce answered
// CLUSTER_AUTHORIZATION_FAILED): the message names enable.idempotence=false.
var errIdempotenceRefused = errors.New("the brokers refuse the idempotent producer")

// producerEpoch is a producer id and the epoch of it a batch is stamped with.
type producerEpoch struct {
	id    int64
	epoch int16
}

// noProducerEpoch is the stamp of no producer: kafkabatch.NoProducer's id and epoch.
func noProducerEpoch() producerEpoch {
	return producerEpoch{id: kafkabatch.NoProducerID, epoch: kafkabatch.NoProducerEpoch}
}

// idempotence is the producer-wide state of the idempotent producer
// (enable.idempotence=true): its producer id and current epoch, shared by
// every partition worker. Each worker keeps its own partition's next
// sequence, advances it on each acknowledged batch, and starts again at 0
// when the epoch it used is no longer current. mu serializes InitProducerId
// and epoch bumps: partitions sharing the producer id never race on them.
type idempotence struct {
	client *kafka.Client
	log    *slog.Logger

	mu  sync.Mutex
	cur producerEpoch // noProducerEpoch until InitProducerId answered
}

// current returns the producer id and epoch, first asking the brokers for
// an id (InitProducerId without a transactional id) when there is none:
// once at the producer's start, and again only after the epoch ran out.
// Other partitions wait meanwhile, for one request timeout at most; a
// failure is the caller's to retry (COORDINATOR_LOAD_IN_PROGRESS, a broker
// down) or to report (an authorization error, naming the way out).
func (s *idempotence) current(ctx context.Context) (producerEpoch, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur.id != kafkabatch.NoProducerID {
		return s.cur, nil
	}
	res, err := s.client.InitProducerID(ctx, &kafka.InitProducerIDRequest{ProducerID: -1, ProducerEpoch: -1})
	if err == nil {
		err = res.Error
	}
	if err != nil {
		return noProducerEpoch(), refusedIdempotence(fmt.Errorf("sink: asking for a producer id (InitProducerId, %s=true): %w", KeyIdempotence, err))
	}
	s.cur = producerEpoch{id: int64(res.Producer.ProducerID), epoch: int16(res.Producer.ProducerEpoch)}
	s.log.Info("idempotent producer initialized", "producer_id", s.cur.id, "producer_epoch", s.cur.epoch)
	return s.cur, nil
}

// bump moves the producer past the epoch from, after a partition's broker
// lost or refused its sequence (OUT_OF_ORDER_SEQUENCE_NUMBER,
// UNKNOWN_PRODUCER_ID) or a batch failed with its outcome unknown. As
// Java's idempotent producer does since KIP-360, the epoch is bumped here,
// not by the broker (InitProducerId without a transactional id always
// hands out a new id): a broker takes a higher epoch of a known id from
// sequence 0. At the last epoch the id is dropped and the next current
// asks for a new one. A bump from an epoch already left does nothing, so
// partitions failing together bump once.
func (s *idempotence) bump(from producerEpoch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != from || from.id == kafkabatch.NoProducerID {
		return
	}
	if s.cur.epoch == math.MaxInt16 {
		s.cur = noProducerEpoch()
		s.log.Info("idempotent producer's epochs used up; asking for a new producer id", "producer_id", from.id)
		return
	}
	s.cur.epoch++
	s.log.Info("idempotent producer's epoch bumped; each partition starts its sequence again at 0", "producer_id", s.cur.id, "producer_epoch", s.cur.epoch)
}

// refusedIdempotence names the way out when err is an authorization
// failure of the idempotent producer; other errors pass unchanged.
func refusedIdempotence(err error) error {
	if !errors.Is(err, kafka.ClusterAuthorizationFailed) {
		return err
	}
	return fmt.Errorf("%w: %w (brokers before Kafka 2.8 need IDEMPOTENT_WRITE on the cluster, later ones WRITE on a topic: `kafka-acls --add --allow-principal User:<user> --operation IdempotentWrite --cluster`; or set %s=false, and a retry after a lost answer may then write a batch twice)",
		err, errIdempotenceRefused, KeyIdempotence)
}

// sequenceLost reports the partition answers after which an idempotent
// producer bumps its epoch and resends: the broker lost the producer's
// state for the partition or finds a gap in its sequence.
func sequenceLost(err error) bool {
	return errors.Is(err, kafka.OutOfOrderSequenceNumber) || errors.Is(err, kafka.UnknownProducerId) || errors.Is(err, kafka.InvalidProducerEpoch)
}

// IdempotentProducerID asks for the producer id the idempotent producer
// writes with, as its first batch would (InitProducerId without a
// transactional id: it fences nothing, so `outboxrelay check` may ask).
// ok is false with enable.idempotence=false. An authorization failure
// names the ACL and the key.
func (p *Producer) IdempotentProducerID(ctx context.Context) (id int64, ok bool, err error) {
	if p.idem == nil {
		return kafkabatch.NoProducerID, false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, p.cfg.RequestTimeout)
	defer cancel()
	cur, err := p.idem.current(ctx)
	return cur.id, true, err
}
