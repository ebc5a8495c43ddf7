package exactlyonce

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/outboxrelay/outboxrelay/capture"
	"github.com/outboxrelay/outboxrelay/internal/kafkabatch"
	"github.com/outboxrelay/outboxrelay/sink"
)

// carryLimit is the default of Config.CarryBytes, which with
// CarryRecords bounds the records after the last boundary that the worker
// holds back (they may not join a transaction that commits before their
// PostgreSQL transaction ends). Past it they are written into the open
// transaction at once (after committing what came before, if that was
// pending), so that a PostgreSQL transaction larger than the relay's
// in-flight budget still streams.
const carryLimit = 1 << 20

// txnWorker is the worker goroutine's state: the open Kafka transaction,
// its per-partition batches not yet written, and the records held back.
type txnWorker struct {
	s     *Sink
	parts map[string]topicParts

	open     bool      // a Kafka transaction is open (something was written)
	openedAt time.Time // when its first batch was written
	written  int       // records written in it
	batches  map[kafkabatch.TopicPartition]*txnBatch
	order    []kafkabatch.TopicPartition // batches in first-use order
	bSeq     int64                       // the last boundary in the transaction, not committed; 0: none
	bPos     capture.LSN                 // the last position among its boundaries
	carry    []txnItem                   // records after the last boundary, held back
	sticky   map[string]int              // null-key partition per topic in this transaction
	lastEnd  time.Time                   // when the last transaction committed
	lastN    int                         // records the last transaction committed
	spans    int                         // PostgreSQL transactions whose records it holds, ended
	recs     bool                        // it holds records after its last boundary
	first    string                      // the event id of its first record
	spanAt   time.Time                   // when the records of its last PostgreSQL transaction began to be added
	lastSpan time.Duration               // how long its last ended PostgreSQL transaction took to be added
	// markers estimates how long after a commit the coordinator is still
	// writing its markers (nextMarkerWait): the pause after a small
	// transaction (txnPause); -1 before anything was learned.
	markers time.Duration

	// limit caps how long a transaction stays open before it commits at
	// a boundary (0: half of transaction.timeout.ms); halved after the
	// coordinator aborted one for its timeout, doubled back after a whole
	// timeout without one (limitAt: when it last changed).
	limit   time.Duration
	limitAt time.Time
}

// txnBatch is one partition's records not yet written, and their size.
type txnBatch struct {
	recs  []*kafkabatch.Pending
	bytes int
}

// topicParts is a topic's partition count and when it was read.
type topicParts struct {
	n  int
	at time.Time
}

// wait is how long the worker may wait for more records before a commit
// is due (0: as long as it takes): the interval, and never past half of
// transaction.timeout.ms, after which the coordinator would abort it.
func (w *txnWorker) wait() time.Duration {
	if w.bSeq == 0 || !w.open || w.s.cfg.Boundary != BoundaryInterval {
		return 0
	}
	return max(time.Millisecond, min(w.s.cfg.Interval, w.openLimit())-time.Since(w.openedAt))
}

// linger is how long the worker waits after a commit before it takes
// what is queued (txnPause), with transaction.boundary=poll.
func (w *txnWorker) linger() time.Duration {
	if w.lastEnd.IsZero() || w.s.cfg.Boundary != BoundaryPoll {
		return 0
	}
	return txnPause(w.s.pcfg.Linger, w.markers, w.lastN) - time.Since(w.lastEnd)
}

// busyRecords: a Kafka transaction of at least this many records is a
// busy one (a backlog, or a machine too loaded to keep up): a steady
// 1,000 events/s with the short pause put 4 records in one (14 at the
// 99th percentile) on the bed, a backlog drain hundreds.
const busyRecords = 20

// txnPause is how long after a commit of n records the worker waits
// before it takes what is queued. After a busy transaction (a backlog,
// or records piling up on a loaded machine), linger.ms, as a producer
// batches: the next Kafka transaction carries more PostgreSQL
// transactions, and its requests cost CPU (the relay's and the broker's)
// per Kafka transaction, not per record. After a small one, only as long as the
// coordinator lately needed to write the last transaction's markers
// (markers, never more than linger.ms): AddPartitionsToTxn sent before
// that is answered CONCURRENT_TRANSACTIONS and retried, and a pause of
// linger.ms where the markers take 1 or 2 ms is latency for nothing.
func txnPause(linger, markers time.Duration, n int) time.Duration {
	if n >= busyRecords || markers < 0 {
		return linger
	}
	return min(linger, markers)
}

// nextMarkerWait is the estimate of the coordinator's marker time (the
// pause after a small transaction) after one whose first
// AddPartitionsToTxn, sent after a pause of est, was answered
// CONCURRENT_TRANSACTIONS concurrent times and accepted retrying later:
// then the pause was too short by about retrying (an upper bound), and
// the estimate moves a quarter of the way to est+retrying. Accepted at
// once, the markers were done by then, perhaps much earlier: it moves a
// quarter of the way to three quarters of est, so the pause probes
// shorter until refusals stop it. It stays within [0, limit].
func nextMarkerWait(est, retrying time.Duration, concurrent int, limit time.Duration) time.Duration {
	if est < 0 {
		est = limit
	}
	sample := est * 3 / 4
	if concurrent > 0 {
		sample = est + retrying
	}
	est += (sample - est) / 4
	return max(0, min(est, limit))
}

// round adds what was queued to the transaction, up to the last boundary;
// commits when due; holds back (or, past carryLimit, writes) the rest.
func (w *txnWorker) round(items []txnItem, flushWant int64) error {
	items = append(w.carry, items...)
	w.carry = nil
	last := -1
	for i := range items {
		if items[i].rec == nil {
			last = i
		}
	}
	for i, it := range items[:last+1] {
		if it.rec != nil {
			if err := w.add(it.rec); err != nil {
				w.carry = items[i:] // not in a batch: drop acknowledges them
				return err
			}
			continue
		}
		w.bSeq = it.seq
		w.bPos = max(w.bPos, it.position)
		if w.recs {
			w.spans, w.recs, w.lastSpan = w.spans+1, false, time.Since(w.spanAt)
		}
		if i < last && w.open && time.Since(w.openedAt) >= w.openLimit() {
			if err := w.commit(); err != nil { // open long enough: commit here, go on in the next one
				w.carry = items[i+1:]
				return err
			}
		}
	}
	tail := items[last+1:]
	if w.bSeq > 0 {
		commit := w.commit
		if !w.due(flushWant) {
			commit = func() error { return w.flushBatches(nil) } // opens the transaction: its interval runs
		}
		if err := commit(); err != nil {
			w.carry = tail
			return err
		}
	}
	bytes := 0
	for _, it := range tail {
		bytes += it.rec.Size
	}
	if bytes < w.s.cfg.CarryBytes && len(tail) < w.s.cfg.CarryRecords {
		w.carry = tail
		return nil
	}
	if w.bSeq > 0 {
		if err := w.commit(); err != nil {
			w.carry = tail
			return err
		}
	}
	for i, it := range tail {
		if err := w.add(it.rec); err != nil {
			w.carry = tail[i:]
			return err
		}
	}
	return w.flushBatches(nil)
}

// due says whether the transaction commits at its last boundary now.
func (w *txnWorker) due(flushWant int64) bool {
	cfg := &w.s.cfg
	if !w.open && w.unwritten() == 0 {
		return true // nothing written: no Kafka transaction to end
	}
	if cfg.Boundary == BoundaryPoll || flushWant >= w.bSeq {
		return true
	}
	if !w.open {
		return false // its interval starts when it opens
	}
	age := time.Since(w.openedAt)
	return age >= cfg.Interval || age >= w.openLimit()
}

// add puts a record in its partition's batch, writing the batch once it is full.
func (w *txnWorker) add(pe *kafkabatch.Pending) error {
	tp, err := w.partition(pe)
	if err != nil {
		return err
	}
	b := w.batches[tp]
	if b == nil {
		if w.batches == nil {
			w.batches = map[kafkabatch.TopicPartition]*txnBatch{}
		}
		b = &txnBatch{}
		w.batches[tp] = b
		w.order = append(w.order, tp)
	}
	limit := min(w.s.pcfg.BatchBytes, w.s.pcfg.MaxRequestSize) - kafkabatch.BatchOverhead
	if len(b.recs) > 0 && b.bytes+pe.Size > limit {
		if err := w.produce(tp, b); err != nil {
			return err
		}
	}
	b.recs = append(b.recs, pe)
	b.bytes += pe.Size
	if w.spans == 0 && !w.recs {
		w.first = pe.EventID
	}
	if !w.recs {
		w.spanAt = time.Now()
	}
	w.recs = true
	return nil
}

// partition picks a record's partition as the at-least-once producer
// does (Java's murmur2 of the key; for a null key, one partition per
// topic and Kafka transaction, sticky as Java's).
func (w *txnWorker) partition(pe *kafkabatch.Pending) (kafkabatch.TopicPartition, error) {
	if pe.Partition >= 0 {
		return kafkabatch.TopicPartition{Topic: pe.Topic, Partition: pe.Partition}, nil
	}
	n, err := w.partitions(pe.Topic)
	if err != nil {
		return kafkabatch.TopicPartition{}, err
	}
	var p int
	if pe.Key != nil {
		p = sink.JavaPartition(pe.Key, n, nil)
	} else {
		p = w.stickyPartition(pe.Topic, n)
	}
	return kafkabatch.TopicPartition{Topic: pe.Topic, Partition: p}, nil
}

// stickyPartition is the null-key partition of topic in the open
// transaction, picked at random when the transaction first needs one.
func (w *txnWorker) stickyPartition(topic string, n int) int {
	if p, ok := w.sticky[topic]; ok && p < n {
		return p
	}
	if w.sticky == nil {
		w.sticky = map[string]int{}
	}
	p := rand.IntN(n)
	w.sticky[topic] = p
	return p
}

// partitions is topic's partition count, read again after metadata.max.age.ms.
func (w *txnWorker) partitions(topic string) (int, error) {
	if tp, ok := w.parts[topic]; ok && time.Since(tp.at) < w.s.pcfg.MetadataMaxAge {
		return tp.n, nil
	}
	n, err := w.s.p.EnsureTopic(w.s.ctx, topic)
	if err != nil {
		return 0, err
	}
	w.parts[topic] = topicParts{n: n, at: time.Now()}
	return n, nil
}

// produce writes one batch inside the transaction (opening it first) and
// acknowledges its records.
func (w *txnWorker) produce(tp kafkabatch.TopicPartition, b *txnBatch) error {
	if err := w.begin(); err != nil {
		return err
	}
	if _, err := w.s.txn.Produce(w.s.ctx, tp, b.messages()); err != nil {
		return err
	}
	w.written += b.acked()
	return nil
}

// messages is b's records for the batch encoder.
func (b *txnBatch) messages() []kafkabatch.Message {
	msgs := make([]kafkabatch.Message, len(b.recs))
	for i, pe := range b.recs {
		msgs[i] = pe.Message()
	}
	return msgs
}

// acked acknowledges b's records, written, and empties b; it returns how
// many there were.
func (b *txnBatch) acked() int {
	n := len(b.recs)
	for _, pe := range b.recs {
		pe.OnAck(nil)
	}
	b.recs, b.bytes = b.recs[:0], 0
	return n
}

// unwritten counts the records in batches not yet written.
func (w *txnWorker) unwritten() int {
	n := 0
	for _, b := range w.batches {
		n += len(b.recs)
	}
	return n
}

// begin opens the Kafka transaction unless it is open.
func (w *txnWorker) begin() error {
	if w.open {
		return nil
	}
	if err := w.s.txn.Begin(); err != nil {
		return err
	}
	w.open, w.openedAt = true, time.Now()
	return nil
}

// flushBatches writes every partition's batch and pos (the position
// record; nil for none) inside the transaction, opening it first:
// ProduceAll adds their partitions in one AddPartitionsToTxn and sends the
// batches in one produce request per leader.
func (w *txnWorker) flushBatches(pos *kafkabatch.PartitionBatch) error {
	var all []kafkabatch.PartitionBatch
	var bs []*txnBatch
	for _, tp := range w.order {
		if b := w.batches[tp]; len(b.recs) > 0 {
			all = append(all, kafkabatch.PartitionBatch{TP: tp, Msgs: b.messages()})
			bs = append(bs, b)
		}
	}
	if pos != nil {
		all = append(all, *pos)
	}
	if len(all) == 0 {
		return nil
	}
	if err := w.begin(); err != nil {
		return err
	}
	if err := w.s.txn.ProduceAll(w.s.ctx, all); err != nil {
		return err
	}
	for _, b := range bs {
		w.written += b.acked()
	}
	return nil
}

// commit writes the batches and the position record, and commits.
func (w *txnWorker) commit() error {
	seq, pos := w.bSeq, w.bPos
	var rec *kafkabatch.PartitionBatch
	if pos > 0 && (w.open || w.unwritten() > 0) {
		r, err := w.position(pos)
		if err != nil {
			return err
		}
		rec = &r
	}
	if err := w.flushBatches(rec); err != nil {
		return err
	}
	if !w.open {
		w.bSeq, w.bPos = 0, 0
		w.s.committedUpTo(seq, 0, 0)
		return nil
	}
	if err := w.s.txn.Commit(w.s.ctx); err != nil {
		return err
	}
	n := w.written
	w.learnMarkers()
	w.open, w.written, w.bSeq, w.bPos, w.lastEnd, w.lastN = false, 0, 0, 0, time.Now(), n
	w.spans, w.first = 0, ""
	clear(w.sticky)
	w.relax()
	w.s.committedUpTo(seq, pos, n)
	return nil
}

// learnMarkers updates the marker time estimate from what the committed
// transaction's first AddPartitionsToTxn met, after the last commit.
func (w *txnWorker) learnMarkers() {
	a := w.s.txn.FirstAdd()
	if w.lastEnd.IsZero() || a.Sent.IsZero() || a.Accepted.IsZero() || w.lastN >= busyRecords {
		return // no commit before it, or its pause was linger.ms (txnPause)
	}
	w.markers = nextMarkerWait(w.markers, a.Accepted.Sub(a.Sent), a.Concurrent, w.s.pcfg.Linger)
}

// position is the offsets-topic record of pos, for the transaction.
func (w *txnWorker) position(pos capture.LSN) (kafkabatch.PartitionBatch, error) {
	msg, err := w.s.offsets.Message(sink.Offset{LSN: pos, Time: time.Now(), Origin: w.s.originNow()})
	if err != nil {
		return kafkabatch.PartitionBatch{}, err
	}
	tp, err := w.positionPartition(msg.Key)
	if err != nil {
		return kafkabatch.PartitionBatch{}, err
	}
	return kafkabatch.PartitionBatch{TP: tp, Msgs: []kafkabatch.Message{msg}}, nil
}

// failed ends the transaction after err: a fenced producer stops for
// good, unless the coordinator only aborted the transaction for its
// timeout (timedOut); anything else is aborted (or, when the abort fails too, ended by
// the next InitProducerId), and the session resumes from the last
// committed position.
func (w *txnWorker) failed(err error) {
	var final error
	if errors.Is(err, kafkabatch.ErrFenced) {
		final = w.timedOut()
		if final == nil {
			final = fmt.Errorf("exactly-once: stopping: %w %q: another outboxrelay with it took over (a second instance with this config, or the failover pair's other instance after this one lost the lock), not a transaction timeout (younger than transaction.timeout.ms, or the coordinator refused this instance's producer id and epoch): %w",
				ErrFenced, w.s.cfg.TransactionalID, err)
		}
	} else {
		if w.open {
			ctx, cancel := context.WithTimeout(w.s.ctx, w.s.cfg.Timeout)
			if aerr := w.s.txn.Abort(ctx); aerr != nil {
				w.s.log.Warn("aborting the Kafka transaction failed; the next InitProducerId ends it", "err", aerr)
			}
			cancel()
			w.open = false
		}
		final = w.permanent(err)
		if final == nil {
			final = fmt.Errorf("%w: %w", ErrAborted, err)
		}
	}
	w.s.log.Warn("exactly-once: Kafka transaction failed", "err", err, "records_in_it", w.written)
	w.drop(final)
	w.s.fail(final)
}

// permanent is the final error of a broker answer that a retry of the
// same records cannot cure, naming the fix; nil for any other error.
func (w *txnWorker) permanent(err error) error {
	switch {
	case errors.Is(err, kafka.MessageSizeTooLarge), errors.Is(err, kafka.RecordListTooLarge), errors.Is(err, kafka.InvalidRecord):
		return fmt.Errorf("exactly-once: %w: Kafka refused a record of the transaction: raise the topic's max.message.bytes above %s (%d), or send smaller payloads: %w",
			ErrRejected, sink.KeyMaxRequestSize, w.s.pcfg.MaxRequestSize, err)
	case errors.Is(err, kafka.TopicAuthorizationFailed), errors.Is(err, kafka.TransactionalIDAuthorizationFailed), errors.Is(err, kafka.ClusterAuthorizationFailed):
		return fmt.Errorf("exactly-once: %w: not authorized: grant the principal WRITE and DESCRIBE on the transactional id and WRITE on the topics, e.g. kafka-acls --add --allow-principal User:<name> --operation Write --operation Describe --transactional-id %q: %w",
			ErrRejected, w.s.cfg.TransactionalID, err)
	case errors.Is(err, kafka.InvalidTransactionTimeout):
		return fmt.Errorf("exactly-once: %w: transaction.timeout.ms %d is above the broker's transaction.max.timeout.ms: lower it, or raise the broker's: %w",
			ErrRejected, w.s.cfg.Timeout.Milliseconds(), err)
	}
	return nil
}

// drop gives err to every record the worker holds and forgets the
// transaction's contents (the transaction itself is ended by the caller).
func (w *txnWorker) drop(err error) {
	for _, tp := range w.order {
		for _, pe := range w.batches[tp].recs {
			pe.OnAck(err)
		}
	}
	for _, it := range w.carry {
		if it.rec != nil {
			it.rec.OnAck(err)
		}
	}
	clear(w.batches)
	w.order, w.carry, w.written, w.bSeq, w.bPos = w.order[:0], nil, 0, 0, 0
	w.spans, w.recs, w.first = 0, false, ""
}

// reset ends what a previous session left open and gets a new epoch
// (InitProducerId): an instance that was standby while another took over
// resumes with a current epoch instead of being fenced at its first write.
func (w *txnWorker) reset(ctx context.Context) error {
	if w.open {
		if err := w.s.txn.Abort(ctx); err != nil && errors.Is(err, kafkabatch.ErrFenced) {
			if err := w.lastFenced(ctx); err != nil {
				return err
			}
		}
		w.open = false
	}
	if err := w.s.txn.Init(ctx); err != nil {
		if perr := w.permanent(err); perr != nil {
			err = perr
		} else if errors.Is(err, kafkabatch.ErrFenced) {
			err = fmt.Errorf("%w: %w", ErrFenced, err)
		}
		return fmt.Errorf("exactly-once: InitProducerId for transactional.id %q: %w", w.s.cfg.TransactionalID, err)
	}
	return nil
}

// lastFenced handles, at Start, a fenced answer to the abort of what the
// last session left open: the coordinator may have aborted it for its
// timeout (PostgreSQL gone for longer than transaction.timeout.ms), or
// another instance had the transactional.id meanwhile. This instance
// holds the failover lock again, so either way Init follows (from the
// fenced state, as a new producer); an error asking ends the session as
// an abort (retried).
func (w *txnWorker) lastFenced(ctx context.Context) error {
	held, err := w.s.holding(ctx)
	if err == nil && held {
		var ok bool
		if ok, err = w.s.txn.ResumeAfterTimeout(ctx); err == nil {
			if ok {
				w.s.log.Info("exactly-once: the last session's open Kafka transaction outlived transaction.timeout.ms and the coordinator aborted it", "transaction.timeout.ms", w.s.cfg.Timeout.Milliseconds())
			} else {
				w.s.log.Info("exactly-once: another producer had this transactional.id since this instance's last session; this one holds the failover lock again and starts a new producer")
			}
			return nil
		}
		if errors.Is(err, kafkabatch.ErrEpochExhausted) {
			return nil // Init gets a new producer id
		}
	}
	if err == nil {
		err = errors.New("this instance does not hold the failover lock")
	}
	return fmt.Errorf("exactly-once: %w: the last session's Kafka transaction was fenced, and asking whether it timed out failed: %w", ErrAborted, err)
}

// positionPartition is the offsets topic's partition of the position
// record. It never creates the topic (that would give it the data topics'
// settings, not compacted): Start's Load does, and a topic gone
// while running fails the transaction, so the next session creates it.
func (w *txnWorker) positionPartition(key []byte) (kafkabatch.TopicPartition, error) {
	topic := w.s.offsets.Topic()
	tp, ok := w.parts[topic]
	n := tp.n
	if !ok || time.Since(tp.at) >= w.s.pcfg.MetadataMaxAge {
		var err error
		if n, err = w.s.p.PartitionCount(w.s.ctx, topic); err != nil {
			return kafkabatch.TopicPartition{}, fmt.Errorf("exactly-once: the offsets topic %s: %w", topic, err)
		}
		w.parts[topic] = topicParts{n: n, at: time.Now()}
	}
	return kafkabatch.TopicPartition{Topic: topic, Partition: sink.JavaPartition(key, n, nil)}, nil
}
