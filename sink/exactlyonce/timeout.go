package exactlyonce

import (
	"context"
	"fmt"
	"time"

	"github.com/outboxrelay/outboxrelay/capture"
)

// The shortest cap on how long a Kafka transaction stays open, as a
// fraction of transaction.timeout.ms: after the coordinator aborted a
// transaction for its timeout with the cap there already, a transaction
// of one PostgreSQL transaction's records stops the relay instead of
// being tried again.
const minOpenLimitDiv = 8

// openLimit is how long a Kafka transaction may stay open before it
// commits at its next boundary: half of transaction.timeout.ms, less
// after the coordinator aborted one for outliving it.
func (w *txnWorker) openLimit() time.Duration {
	if w.limit == 0 {
		return w.s.cfg.Timeout / 2
	}
	return w.limit
}

// relax doubles the open limit back, once per transaction.timeout.ms
// without a timeout abort, after a commit.
func (w *txnWorker) relax() {
	if w.limit == 0 || time.Since(w.limitAt) < w.s.cfg.Timeout {
		return
	}
	w.limit, w.limitAt = 2*w.limit, time.Now()
	if w.limit >= w.s.cfg.Timeout/2 {
		w.limit = 0
	}
	w.s.log.Info("exactly-once: Kafka transactions may stay open longer again", "open_limit", w.openLimit(), "transaction.timeout.ms", w.s.cfg.Timeout.Milliseconds())
}

// timedOut asks, after a fencing error, whether the coordinator only
// aborted the transaction for outliving transaction.timeout.ms
// (kafkabatch.TxnProducer.ResumeAfterTimeout); nil when it was a
// takeover, or when this instance no longer holds the failover lock (it
// does not ask then: the question would fence the instance that holds
// it). If it was the timeout, the producer goes on, the open limit
// halves, and the error ends the session as an abort (ErrAborted: the
// next one resumes from the last committed position). A PostgreSQL
// transaction that alone streamed into Kafka for longer than the open
// limit at its shortest is ErrRejected: only a longer timeout lets it
// through. Not knowing (the lock or the coordinator could not be asked)
// is an abort too: the next session, which needs the lock again, asks.
func (w *txnWorker) timedOut() error {
	ctx, cancel := context.WithTimeout(w.s.ctx, w.s.cfg.Timeout)
	defer cancel()
	if held, err := w.s.holding(ctx); err != nil || !held {
		return w.unknown("checking that this instance still holds the failover lock", err)
	}
	ok, err := w.s.txn.ResumeAfterTimeout(ctx)
	if err != nil {
		return w.unknown("asking the coordinator whether the transaction timed out", err)
	}
	if !ok {
		return nil
	}
	age, limit := time.Since(w.openedAt).Round(time.Millisecond), w.openLimit()
	w.open = false
	floor := w.s.cfg.Timeout / minOpenLimitDiv
	span := w.lastSpan
	if w.recs {
		span = time.Since(w.spanAt)
	}
	if w.spans+btoi(w.recs) <= 1 && limit <= floor && span > limit {
		return fmt.Errorf("exactly-once: stopping: %w: the PostgreSQL transaction after position %s (first event %q%s) streams into Kafka for longer than transaction.timeout.ms %s even alone (%d records, streaming %s, open %s, aborted by the coordinator): raise transaction.timeout.ms, up to the broker's transaction.max.timeout.ms",
			ErrRejected, w.s.committedPos().String(), w.first, w.commitPos(), w.s.cfg.Timeout, w.written, span.Round(time.Millisecond), age)
	}
	if limit <= floor {
		w.s.log.Warn("exactly-once: the coordinator aborted a small Kafka transaction for outliving transaction.timeout.ms: the broker or this machine is slow; retrying (raise transaction.timeout.ms if this repeats)",
			"transaction.timeout.ms", w.s.cfg.Timeout.Milliseconds(), "open", age, "records", w.written, "streaming", span.Round(time.Millisecond))
	}
	w.limit, w.limitAt = max(limit/2, floor), time.Now()
	w.s.log.Warn("exactly-once: the coordinator aborted a Kafka transaction that outlived transaction.timeout.ms; resuming from the last committed position with shorter transactions",
		"transaction.timeout.ms", w.s.cfg.Timeout.Milliseconds(), "open", age, "records", w.written, "postgres_transactions", w.spans+btoi(w.recs), "open_limit", w.limit)
	return fmt.Errorf("%w: the Kafka transaction (%d records, open %s) outlived transaction.timeout.ms %s and the coordinator aborted it; the next ones commit within %s (raise transaction.timeout.ms if this repeats)",
		ErrAborted, w.written, age, w.s.cfg.Timeout, w.limit)
}

// unknown ends the session as an abort when a fencing error could be
// neither told a timeout nor a takeover (err nil: the lock is lost, so it
// is a takeover: nil). The transaction stays open to the worker, so the
// next session's Start asks again, holding the lock.
func (w *txnWorker) unknown(what string, err error) error {
	if err == nil {
		w.s.log.Info("exactly-once: fenced after this instance lost the failover lock: not asking the coordinator whether it was a timeout")
		return nil
	}
	w.s.log.Warn("exactly-once: "+what+" failed; ending the session as aborted, the next one asks again", "err", err)
	return fmt.Errorf("%w: fenced, and %s failed (not taken as a takeover; the next session asks again once it holds the failover lock): %w", ErrAborted, what, err)
}

// holding says whether this instance still holds the right to write
// (SetHolder; true without a failover lock: there is no standby then).
func (s *Sink) holding(ctx context.Context) (bool, error) {
	s.mu.Lock()
	h := s.holder
	s.mu.Unlock()
	if h == nil {
		return true, nil
	}
	return h(ctx)
}

// SetHolder gives the sink the failover lock's check: whether this
// instance still holds it, asked before the coordinator is (its question
// fences the holder's transaction). Call it before Start.
func (s *Sink) SetHolder(h func(context.Context) (bool, error)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.holder = h
}

// commitPos names the commit position of the transaction's last
// PostgreSQL transaction, when its boundary came.
func (w *txnWorker) commitPos() string {
	if w.bPos == 0 {
		return ""
	}
	return ", commit LSN " + w.bPos.String()
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// committedPos is the position the last Kafka commit recorded.
func (s *Sink) committedPos() capture.LSN {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pos
}
