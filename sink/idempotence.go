package sink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"strconv"
	"sync"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol/initproducerid"
	metadataAPI "github.com/segmentio/kafka-go/protocol/metadata"

	"github.com/outboxrelay/outboxrelay/internal/kafkabatch"
)

// ErrIdempotenceRefused marks the brokers' refusal of the idempotent
// producer (InitProducerId or an idempotent produce answered
// CLUSTER_AUTHORIZATION_FAILED): the message names enable.idempotence=false.
var ErrIdempotenceRefused = errors.New("the brokers refuse the idempotent producer")

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
	p   *Producer // its transport and metadata: InitProducerId goes to any broker
	log *slog.Logger

	mu    sync.Mutex
	cur   producerEpoch // noProducerEpoch until InitProducerId answered
	fatal error         // the brokers refused the producer: every batch fails with it
}

// producerIDError is a failure to get a producer id (InitProducerId): no
// batch was sent, so it says nothing about the batch's records.
type producerIDError struct{ err error }

func (e *producerIDError) Error() string {
	return fmt.Sprintf("sink: asking for a producer id (InitProducerId, %s=true): %v", KeyIdempotence, e.err)
}

func (e *producerIDError) Unwrap() error { return e.err }

// current returns the producer id and epoch, first asking the brokers for
// an id (InitProducerId without a transactional id) when there is none:
// once at the producer's start, and again only after the epoch ran out.
// mu is held across the request, so a partition asking meanwhile waits for
// it and then, when it failed, makes its own attempt: with the brokers
// down, the k-th partition's first attempt ends after about k request
// timeouts (a success serves every partition at once). A transient failure
// is the caller's to retry (COORDINATOR_LOAD_IN_PROGRESS, a broker down);
// a refusal (CLUSTER_AUTHORIZATION_FAILED, or an answer no retry heals) is
// kept, as Java's producer makes it fatal, and returned from then on
// without asking again.
func (s *idempotence) current(ctx context.Context) (producerEpoch, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fatal != nil {
		return noProducerEpoch(), s.fatal
	}
	if s.cur.id != kafkabatch.NoProducerID {
		return s.cur, nil
	}
	cur, err := s.p.initProducerID(ctx)
	if err != nil {
		err = refusedIdempotence(&producerIDError{err})
		if !retryable(err) {
			s.fatal = err
		}
		return noProducerEpoch(), err
	}
	s.cur = cur
	s.log.Info("idempotent producer initialized", "producer_id", s.cur.id, "producer_epoch", s.cur.epoch)
	return s.cur, nil
}

// refuse makes err, a produce answered CLUSTER_AUTHORIZATION_FAILED for an
// idempotent batch, fatal to the producer, as Java's producer does: every
// later batch fails with it rather than being sent to be refused too.
func (s *idempotence) refuse(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fatal == nil {
		s.fatal = err
	}
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
		err, ErrIdempotenceRefused, KeyIdempotence)
}

// sequenceLost reports the partition answers after which an idempotent
// producer bumps its epoch and resends: the broker lost the producer's
// state for the partition or finds a gap in its sequence.
func sequenceLost(err error) bool {
	return errors.Is(err, kafka.OutOfOrderSequenceNumber) || errors.Is(err, kafka.UnknownProducerId)
}

// producerFailure reports a batch's failure that is the idempotent
// producer's, not its records': no producer id, the brokers refusing the
// producer, its epoch or sequence refused for good. Sending the records
// one by one would only repeat it for each.
func producerFailure(err error) bool {
	var pid *producerIDError
	return errors.As(err, &pid) || errors.Is(err, ErrIdempotenceRefused) ||
		errors.Is(err, kafka.InvalidProducerEpoch) || sequenceLost(err)
}

// Retriable reports whether the producer retries err (a network error, a
// timeout, COORDINATOR_LOAD_IN_PROGRESS, ...) rather than failing with it,
// for callers that make their own attempts (`outboxrelay check`).
func Retriable(err error) bool { return retryable(err) }

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

// initProducerID asks a broker for a producer id with InitProducerId
// without a transactional id, sent straight to a broker of the cluster as
// Java's producer does (to its least loaded node). kafka-go's Client and
// Transport would first look up a transaction coordinator for the empty
// transactional id (FindCoordinator), which makes the broker create the
// __transaction_state topic when it is missing and, with an authorizer,
// log a denied DESCRIBE on transactional id "": not what an at-least-once
// producer, or `outboxrelay check`, should do to a cluster. The brokers
// come from kafka-go's cached metadata; one that cannot be reached is
// skipped for the next.
func (p *Producer) initProducerID(ctx context.Context) (producerEpoch, error) {
	r, err := p.transport.RoundTrip(ctx, p.client.Addr, &metadataAPI.Request{})
	if err != nil {
		return noProducerEpoch(), fmt.Errorf("fetching the brokers (metadata): %w", err)
	}
	brokers := r.(*metadataAPI.Response).Brokers
	if len(brokers) == 0 {
		return noProducerEpoch(), errors.New("the metadata names no broker")
	}
	var errs []error
	for _, b := range brokers {
		addr := net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
		pe, err := p.initProducerIDAt(ctx, addr)
		var ke kafka.Error
		if err == nil || errors.As(err, &ke) || ctx.Err() != nil {
			return pe, err // an answer, or no time left
		}
		errs = append(errs, err)
	}
	return noProducerEpoch(), errors.Join(errs...)
}

// initProducerIDAt sends InitProducerId on a connection of its own to the
// broker at addr, closed afterwards: the request is rare (once at start).
func (p *Producer) initProducerIDAt(ctx context.Context, addr string) (producerEpoch, error) {
	m, err := p.roundTripOnce(ctx, addr, &initproducerid.Request{ProducerID: -1, ProducerEpoch: -1})
	if err != nil {
		return noProducerEpoch(), fmt.Errorf("InitProducerId to broker %s: %w", addr, err)
	}
	res, ok := m.(*initproducerid.Response)
	if !ok {
		return noProducerEpoch(), fmt.Errorf("broker %s answered InitProducerId with %T", addr, m)
	}
	if res.ErrorCode != 0 {
		return noProducerEpoch(), fmt.Errorf("broker %s: %w", addr, kafka.Error(res.ErrorCode))
	}
	return producerEpoch{id: res.ProducerID, epoch: res.ProducerEpoch}, nil
}
