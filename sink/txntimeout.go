package sink

import (
	"context"
	"fmt"
	"time"
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
// takeover. If it was the timeout, the producer goes on, the open limit
// halves, and the error ends the session as an abort (ErrTxnAborted: the
// next one resumes from the last committed position); a transaction of
// one PostgreSQL transaction's records that timed out with the limit at
// its shortest is ErrTxnRejected: it streams longer than the timeout even
// alone, and only a longer timeout lets it through.
func (w *txnWorker) timedOut() error {
	ctx, cancel := context.WithTimeout(w.s.ctx, w.s.cfg.Timeout)
	ok, err := w.s.txn.ResumeAfterTimeout(ctx)
	cancel()
	if err != nil {
		w.s.log.Warn("exactly-once: asking the coordinator whether the transaction timed out failed; taken as fenced", "err", err)
	}
	if !ok {
		return nil
	}
	age, limit := time.Since(w.openedAt).Round(time.Millisecond), w.openLimit()
	w.open = false
	if w.spans+btoi(w.recs) <= 1 && limit <= w.s.cfg.Timeout/minOpenLimitDiv {
		return fmt.Errorf("exactly-once: stopping: %w: the PostgreSQL transaction after position %s (first event %q%s) streams into Kafka for longer than transaction.timeout.ms %s even alone (%d records, open %s, aborted by the coordinator): raise transaction.timeout.ms, up to the broker's transaction.max.timeout.ms",
			ErrTxnRejected, lsnString(w.s.committedPos()), w.first, w.commitPos(), w.s.cfg.Timeout, w.written, age)
	}
	w.limit, w.limitAt = max(limit/2, w.s.cfg.Timeout/minOpenLimitDiv), time.Now()
	w.s.log.Warn("exactly-once: the coordinator aborted a Kafka transaction that outlived transaction.timeout.ms; resuming from the last committed position with shorter transactions",
		"transaction.timeout.ms", w.s.cfg.Timeout.Milliseconds(), "open", age, "records", w.written, "postgres_transactions", w.spans+btoi(w.recs), "open_limit", w.limit)
	return fmt.Errorf("%w: the Kafka transaction (%d records, open %s) outlived transaction.timeout.ms %s and the coordinator aborted it; the next ones commit within %s (raise transaction.timeout.ms if this repeats)",
		ErrTxnAborted, w.written, age, w.s.cfg.Timeout, w.limit)
}

// commitPos names the commit position of the transaction's last
// PostgreSQL transaction, when its boundary came.
func (w *txnWorker) commitPos() string {
	if w.bPos == 0 {
		return ""
	}
	return ", commit LSN " + lsnString(w.bPos)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// lsnString formats a position as PostgreSQL writes an LSN.
func lsnString(pos uint64) string { return fmt.Sprintf("%X/%X", pos>>32, uint32(pos)) }

// committedPos is the position the last Kafka commit recorded.
func (s *TxnSink) committedPos() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pos
}
