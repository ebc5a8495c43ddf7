package kafkabatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
)

// errClass is what TxnProducer does after an error.
type errClass int

const (
	classRetry     errClass = iota // send the same request again
	classFenced                    // stop for good
	classAbortable                 // give up the transaction
)

// classify decides, in this one place, what an error of a transactional
// request means. Kafka's codes as Java's TransactionManager reads them;
// anything that is not an answer of the broker (a connection closed, a
// timeout) is retried, as the request may simply not have arrived.
func classify(err error) errClass {
	var kerr kafka.Error
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return classAbortable
	case errors.Is(err, kafka.ProducerFenced), errors.Is(err, kafka.InvalidProducerEpoch),
		errors.Is(err, kafka.TransactionCoordinatorFenced):
		return classFenced
	case errors.Is(err, kafka.ConcurrentTransactions), // the coordinator still writes the last transaction's markers
		errors.Is(err, kafka.GroupLoadInProgress),          // COORDINATOR_LOAD_IN_PROGRESS
		errors.Is(err, kafka.GroupCoordinatorNotAvailable), // COORDINATOR_NOT_AVAILABLE
		errors.Is(err, kafka.NotCoordinatorForGroup),       // NOT_COORDINATOR: it moved
		unknownTopic(err):
		return classRetry
	case errors.As(err, &kerr):
		if kerr.Temporary() {
			return classRetry
		}
		return classAbortable
	default:
		return classRetry
	}
}

// unknownTopic: kafka-go's cached cluster layout does not have the
// partition yet (a topic just created); it answers without asking.
func unknownTopic(err error) bool {
	return errors.Is(err, protocol.ErrNoTopic) || errors.Is(err, protocol.ErrNoPartition) || errors.Is(err, kafka.UnknownTopicOrPartition)
}

// concurrentTxnRetryMax is the longest wait before retrying
// CONCURRENT_TRANSACTIONS (Java's ADD_PARTITIONS_RETRY_BACKOFF_MS).
const concurrentTxnRetryMax = 20 * time.Millisecond

// opAddPartitions names AddPartitionsToTxn in retry: the one request
// whose CONCURRENT_TRANSACTIONS waits concurrentTxnWait.
const opAddPartitions = "AddPartitionsToTxn"

// concurrentTxnWait is the wait before retry attempt+1 of a request the
// coordinator answered CONCURRENT_TRANSACTIONS: 1, 2, 4, 8, 16, then 20 ms.
func concurrentTxnWait(attempt int) time.Duration {
	return min(time.Duration(1<<min(attempt-1, 5))*time.Millisecond, concurrentTxnRetryMax)
}

// retry calls f until it succeeds, fails with an error that is not
// transient, or ctx ends; waits double from retry.backoff.ms up to
// retry.backoff.max.ms. AddPartitionsToTxn answered
// CONCURRENT_TRANSACTIONS waits concurrentTxnWait instead, as Java's
// (other requests keep the normal backoff). A failed attempt is logged
// at Debug; once the request has failed for a second, at Warn at most
// every retryWarnEvery.
func (p *TxnProducer) retry(ctx context.Context, op string, f func() error) error {
	wait := p.cfg.RetryBackoff
	start, warned := time.Now(), time.Time{}
	for attempt := 1; ; attempt++ {
		err := f()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w; the last attempt: %w", ctx.Err(), err)
		}
		if classify(err) != classRetry {
			return err
		}
		if unknownTopic(err) {
			p.refreshMetadata()
		}
		next := wait
		if op == opAddPartitions && errors.Is(err, kafka.ConcurrentTransactions) {
			// The coordinator is writing the last transaction's markers,
			// a matter of milliseconds, more on a loaded broker: Java
			// retries AddPartitionsToTxn every 20 ms here rather than
			// after retry.backoff.ms, doubling; this waits 1 ms, then
			// doubles up to 20 ms and stays there, so a slow marker
			// write costs at most 20 ms more, not up to retry.backoff.max.ms.
			next = concurrentTxnWait(attempt)
			if p.first.Accepted.IsZero() && !p.first.Sent.IsZero() {
				p.first.Concurrent++
			}
		} else {
			wait = min(2*wait, p.cfg.RetryBackoffMax)
		}
		level := slog.LevelDebug
		if time.Since(start) >= time.Second && time.Since(warned) >= retryWarnEvery {
			level, warned = slog.LevelWarn, time.Now()
		}
		p.log.Log(ctx, level, "transactional request failed; retrying", "op", op, "attempt", attempt, "wait", next, "error", err)
		t := time.NewTimer(next)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w; the last attempt: %w", ctx.Err(), err)
		}
	}
}

// retryWarnEvery is how often at most a request retried again and again
// logs its failure at Warn (the first second of retries stays at Debug:
// a transient answer is normal).
const retryWarnEvery = 5 * time.Second

// refreshMetadata makes kafka-go fetch the cluster layout again (its
// transport does when its connections are closed), as sink does.
func (p *TxnProducer) refreshMetadata() {
	if t, ok := p.client.Transport.(*kafka.Transport); ok {
		t.CloseIdleConnections()
	}
}

// fail records what err does to the producer's state and returns it
// wrapped with the operation, the ids and, when it applies, ErrFenced or
// ErrAbortable.
func (p *TxnProducer) fail(op string, err error) error {
	if classify(err) == classFenced {
		p.state = stateFenced
		return p.fencedErr(op, err)
	}
	if p.state == stateInTxn || p.state == stateAbortable {
		p.state = stateAbortable
		// The broker's sequences for this producer are off: after the
		// abort, a new epoch numbers from 0 again.
		if errors.Is(err, kafka.OutOfOrderSequenceNumber) || errors.Is(err, kafka.UnknownProducerId) {
			p.bump = true
		}
		return fmt.Errorf("kafkabatch: %s (transactional.id %q, producer id %d, epoch %d): %w: %w", op, p.cfg.TransactionalID, p.producerID, p.epoch, ErrAbortable, err)
	}
	return fmt.Errorf("kafkabatch: %s (transactional.id %q): %w", op, p.cfg.TransactionalID, err)
}

func (p *TxnProducer) fencedErr(op string, err error) error {
	return fmt.Errorf("kafkabatch: %s (transactional.id %q, producer id %d, epoch %d): %w", op, p.cfg.TransactionalID, p.producerID, p.epoch, fencedError{err})
}

// fencedError is ErrFenced with the broker's answer, said once: its text
// is the answer's alone (Kafka's own says who fenced), ErrFenced's only
// when there is none.
type fencedError struct{ err error }

func (f fencedError) Error() string {
	if f.err == nil {
		return ErrFenced.Error()
	}
	return f.err.Error()
}

func (f fencedError) Is(target error) bool { return target == ErrFenced }
func (f fencedError) Unwrap() error        { return f.err }

func (p *TxnProducer) stateErr(op string) error {
	switch p.state {
	case stateUninit:
		return fmt.Errorf("kafkabatch: %s before Init", op)
	case stateReady:
		return fmt.Errorf("kafkabatch: %s with no transaction open; call Begin", op)
	case stateInTxn:
		return fmt.Errorf("kafkabatch: %s with a transaction open; commit or abort it first", op)
	case stateAbortable:
		return fmt.Errorf("kafkabatch: %s after an error: %w; call Abort", op, ErrAbortable)
	default:
		return p.fencedErr(op, nil)
	}
}
