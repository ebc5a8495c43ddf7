package sink

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"

	"github.com/outboxrelay/outboxrelay/internal/kafkabatch"
)

// partitionWorker owns one topic-partition: an ordered queue and the one
// goroutine that sends it, one batch at a time. Its queue holds only records
// counted in the producer's budget (buffer.memory, and below it the relay's
// in-flight budget), so it needs no bound of its own.
type partitionWorker struct {
	p   *Producer
	key topicPartition

	mu     sync.Mutex
	queue  []*pending
	queued int // bytes in queue, by kafkabatch.RecordSize
	closed bool
	// lingering: the worker sleeps until linger.ms of the oldest queued
	// record passes. A push then wakes it only if it fills the batch, not
	// for every record: at a steady rate that was a goroutine wake-up and a
	// timer reset per event, most of the relay's CPU.
	lingering bool
	// idle: the worker sleeps with nothing queued. The push that queues
	// the first record arms the linger timer itself instead of waking the
	// worker to arm it: one wake-up per batch, when it is due, not two.
	idle  bool
	timer *time.Timer // the linger timer; armed says whether it runs
	armed bool
	wake  chan struct{} // capacity 1: "the queue changed"

	// With enable.idempotence (p.idem set), owned by the worker's
	// goroutine: the producer epoch of the partition's last batch and the
	// sequence of its next record, advanced on each acknowledged batch.
	epoch producerEpoch
	seq   int32

	// buf: the encoding of the worker's last batch, owned by its
	// goroutine, whose capacity the next batch reuses (encode). A batch's
	// bytes are read only until produceRaw returns, and the next batch is
	// encoded only once every attempt of the last one has ended, so no
	// retry can send bytes of another batch. Kept while more records are
	// queued (a backlog, where it saves an allocation per batch); dropped
	// when the worker goes idle with one larger than idleBufferCap.
	buf []byte
}

// idleBufferCap: the largest encoding buffer an idle partition worker keeps
// (at a steady rate batches are a record or a few; a backlog's are up to
// batch.size, and a producer writes to many partitions).
const idleBufferCap = 16 << 10

func newPartitionWorker(p *Producer, key topicPartition) *partitionWorker {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &partitionWorker{p: p, key: key, wake: make(chan struct{}, 1), timer: t, epoch: noProducerEpoch()}
}

// push appends pe; false when the worker has stopped (the producer closes).
func (w *partitionWorker) push(pe *pending) bool {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return false
	}
	pe.queued = w.p.since()
	w.queue = append(w.queue, pe)
	w.queued += pe.Size
	signal := !w.lingering || w.queued >= w.batchLimit()
	if w.idle && len(w.queue) == 1 && w.p.cfg.Linger > 0 && w.queued < w.batchLimit() {
		w.idle, w.lingering, signal = false, true, false
		w.armLocked(w.p.cfg.Linger)
	}
	w.mu.Unlock()
	if signal {
		select {
		case w.wake <- struct{}{}:
		default: // a wake-up is already pending
		}
	}
	return true
}

// batchLimit is the most record bytes one produce request carries.
func (w *partitionWorker) batchLimit() int {
	return min(w.p.cfg.BatchBytes, w.p.cfg.MaxRequestSize) - kafkabatch.BatchOverhead
}

func (w *partitionWorker) run() {
	defer w.p.wg.Done()
	for {
		batch := w.next()
		if batch == nil {
			break
		}
		w.deliver(batch)
		w.trimBuffer()
	}
	w.mu.Lock()
	w.closed = true
	rest := w.queue
	w.queue, w.queued = nil, 0
	w.mu.Unlock()
	for _, pe := range rest {
		w.p.ack(pe, ErrClosed)
	}
}

// trimBuffer drops the encoding buffer when it is larger than an idle
// worker keeps and nothing more is queued.
func (w *partitionWorker) trimBuffer() {
	if cap(w.buf) <= idleBufferCap {
		return
	}
	w.mu.Lock()
	idle := len(w.queue) == 0
	w.mu.Unlock()
	if idle {
		w.buf = nil
	}
}

// next waits for records and returns the next batch: the oldest records up
// to batch.size (and max.request.size), once the batch is full or its oldest
// record has waited linger.ms. nil when the producer closes.
func (w *partitionWorker) next() []*pending {
	limit := w.batchLimit()
	for {
		w.mu.Lock()
		if len(w.queue) > 0 {
			wait := w.p.cfg.Linger - (w.p.since() - w.queue[0].queued)
			if wait <= 0 || w.queued >= limit {
				w.lingering, w.idle = false, false
				w.disarmLocked()
				batch := w.takeLocked(limit)
				w.mu.Unlock()
				return batch
			}
			if !w.armed {
				w.armLocked(wait)
			}
		}
		w.lingering = len(w.queue) > 0
		w.idle = len(w.queue) == 0
		w.mu.Unlock()

		select {
		case <-w.wake:
		case <-w.timer.C:
			w.mu.Lock()
			w.armed = false
			w.mu.Unlock()
		case <-w.p.ctx.Done():
			w.mu.Lock()
			w.idle = false
			w.disarmLocked()
			w.mu.Unlock()
			return nil
		}
	}
}

// armLocked starts the linger timer: it fires after d. Go's timers (since
// 1.23) deliver no stale tick after Reset or Stop, so a timer re-armed by
// push never wakes the worker early for an older batch.
func (w *partitionWorker) armLocked(d time.Duration) {
	w.timer.Reset(d)
	w.armed = true
}

func (w *partitionWorker) disarmLocked() {
	if w.armed {
		w.timer.Stop()
		w.armed = false
	}
}

func (w *partitionWorker) takeLocked(limit int) []*pending {
	n, bytes := 0, 0
	for n < len(w.queue) && (n == 0 || bytes+w.queue[n].Size <= limit) {
		bytes += w.queue[n].Size
		n++
	}
	batch := make([]*pending, n)
	copy(batch, w.queue)
	clear(w.queue[:n]) // drop references so acknowledged records can be freed
	w.queue = w.queue[n:]
	w.queued -= bytes
	return batch
}

// deliver sends batch until it succeeds or fails for good, then acks it.
// When a batch fails for good it is sent again one record at a time, in
// order, so that only the records Kafka refuses fail (a batch-level
// MESSAGE_TOO_LARGE usually means one big record, not all of them). A
// failure of the idempotent producer itself (no producer id, the brokers
// refusing it, its epoch refused) says nothing of the records: the whole
// batch fails with it, once, instead of once per record.
func (w *partitionWorker) deliver(batch []*pending) {
	base, err := w.produceRetrying(batch)
	if err == nil || errors.Is(err, ErrClosed) || len(batch) == 1 || producerFailure(err) {
		for i, pe := range batch {
			w.placed(pe, base, i, err)
			w.p.ack(pe, err)
		}
		return
	}
	w.p.log.Warn("batch refused; resending its records one by one to find the refused ones",
		"topic", w.key.topic, "partition", w.key.partition, "records", len(batch), "error", err)
	for _, pe := range batch {
		base, err := w.produceRetrying([]*pending{pe})
		w.placed(pe, base, 0, err)
		w.p.ack(pe, err)
	}
}

// placed tells pe's Placed, when it asks, where Kafka wrote it: the i-th
// record of a batch written at base (-1: the answer did not say).
func (w *partitionWorker) placed(pe *pending, base int64, i int, err error) {
	if pe.Placed == nil || err != nil {
		return
	}
	if base >= 0 {
		base += int64(i)
	}
	pe.Placed(w.key.partition, base)
}

// produceRetrying sends batch, retrying transient failures with capped
// exponential backoff until it succeeds, fails for good, or the producer
// closes (ErrClosed). Nothing else of the partition is sent meanwhile: that
// is what keeps per-key order across retries and outages.
func (w *partitionWorker) produceRetrying(batch []*pending) (int64, error) {
	base, err := w.sendRetrying(batch)
	if err != nil && !errors.Is(err, ErrClosed) && w.p.idem != nil {
		// An attempt of the failed batch may be written under its
		// sequence, and the next batch would reuse it: a broker takes
		// a batch with the same sequences for a duplicate. A new epoch
		// starts the partition's sequence afresh.
		w.p.idem.bump(w.epoch)
	}
	return base, err
}

// sendRetrying is produceRetrying's loop. The batch is encoded once and
// every retry resends the same bytes, so with enable.idempotence the broker
// keeps one copy whatever answers were lost; only when the broker lost or
// refused the partition's sequence is it stamped again, with a new epoch.
func (w *partitionWorker) sendRetrying(batch []*pending) (int64, error) {
	rl := retryLog{log: w.p.log, what: "produce", attrs: []any{
		"topic", w.key.topic, "partition", w.key.partition, "records", len(batch), "first_event_id", batch[0].EventID,
	}}
	var enc []byte // the batch on the wire, once encoded
	bumps := 0     // epoch bumps for this batch (sequence lost)
	for {
		var err error
		base := int64(-1)
		if enc == nil {
			enc, err = w.encode(batch)
		}
		if err == nil {
			base, err = w.produce(enc)
		}
		if err == nil {
			w.seq = kafkabatch.IncrementSequence(w.seq, int32(len(batch)))
			rl.recovered()
			w.p.observeProduced(batch)
			return base, nil
		}
		if w.p.ctx.Err() != nil {
			return -1, ErrClosed
		}
		fail := false
		if w.p.idem != nil && enc != nil {
			var restamp bool
			restamp, fail, err = w.idempotentAnswer(err, &bumps, len(batch))
			if restamp {
				enc = nil
			}
		}
		if fail || !retryable(err) {
			w.p.observeFailed(err, false)
			return -1, err
		}
		w.p.observeFailed(err, true)
		if unknownPartition(err) && rl.attempt >= 2 {
			if gone := w.partitionGone(); gone != nil {
				w.p.observeFailed(gone, false)
				return -1, gone
			}
		}
		if staleLeader(err) {
			w.p.refreshMetadata()
		}
		wait := w.p.backoff(rl.attempt + 1)
		rl.failed(err, wait)
		if !w.p.sleep(wait) {
			return -1, ErrClosed
		}
	}
}

// partitionGone asks the cluster, afresh, whether the worker's partition
// still exists. A topic deleted and created again with fewer partitions
// answers UNKNOWN_TOPIC_OR_PARTITION for ever; its records must fail
// (the relay stops before them, and routes them anew after a restart)
// rather than hold the confirmed LSN back with no end. A topic missing
// altogether, or an answer that cannot be had, is retried as before.
func (w *partitionWorker) partitionGone() error {
	ctx, cancel := context.WithTimeout(w.p.ctx, w.p.cfg.RequestTimeout)
	defer cancel()
	w.p.refreshMetadataNow()
	n, err := w.p.partitionCount(ctx, w.key.topic, false)
	if err != nil || n > w.key.partition {
		return nil
	}
	return fmt.Errorf("%w: partition %d of topic %q is gone (the topic has %d now, after being deleted and created again?); restart the relay to route the unconfirmed records by the new count, or give the topic its partitions back",
		ErrNoSuchPartition, w.key.partition, w.key.topic, n)
}

// encode writes batch as one record batch (message format v2) the way
// Java's producer does, compressed with compression.type. With
// enable.idempotence it carries the producer id, the current epoch and the
// partition's next sequence (from 0 again when the epoch changed since the
// partition's last batch); without, producer id -1. It encodes into the
// worker's buffer (buf), overwriting the last batch's bytes: the caller
// calls it again only once every attempt of the bytes it returned ended.
func (w *partitionWorker) encode(batch []*pending) ([]byte, error) {
	stamp := kafkabatch.NoProducer
	if w.p.idem != nil {
		ctx, cancel := context.WithTimeout(w.p.ctx, w.p.cfg.RequestTimeout)
		cur, err := w.p.idem.current(ctx)
		cancel()
		if err != nil {
			return nil, err
		}
		if cur != w.epoch {
			w.epoch, w.seq = cur, 0
		}
		stamp = kafkabatch.Producer{ID: cur.id, Epoch: cur.epoch, BaseSequence: w.seq}
	}
	enc, err := kafkabatch.AppendMessages(w.buf[:0], stamp, w.p.cfg.Compression, len(batch), func(i int) kafkabatch.Message {
		return batch[i].Message()
	})
	if err != nil {
		return nil, fmt.Errorf("sink: encoding a batch for %s/%d: %w", w.key.topic, w.key.partition, err)
	}
	w.buf = enc
	return enc, nil
}

// produce sends one encoded batch, bounded by request.timeout.ms. An
// idempotent batch answered DUPLICATE_SEQUENCE_NUMBER is written: an
// earlier attempt whose answer was lost wrote it.
func (w *partitionWorker) produce(enc []byte) (int64, error) {
	ctx, cancel := context.WithTimeout(w.p.ctx, w.p.cfg.RequestTimeout)
	defer cancel()
	base, err := w.p.produceRaw(ctx, w.key, enc)
	if w.p.idem == nil {
		return base, err
	}
	if errors.Is(err, kafka.DuplicateSequenceNumber) {
		return -1, nil
	}
	err = refusedIdempotence(err)
	if errors.Is(err, ErrIdempotenceRefused) {
		w.p.idem.refuse(err)
	}
	return base, err
}

// maxBumpsPerBatch: how often one batch may bump the epoch after its
// sequence was lost. A correct broker takes (new epoch, sequence 0) at
// once; one that keeps refusing would otherwise burn an epoch, and reset
// every partition's sequence, at each backoff step.
const maxBumpsPerBatch = 2

// idempotentAnswer decides on an idempotent batch's failed produce, as
// Java's idempotent producer (Sender, TransactionManager.canRetry and
// handleFailedBatch): OUT_OF_ORDER_SEQUENCE_NUMBER and UNKNOWN_PRODUCER_ID
// (the broker lost or refused the partition's sequence) bump the epoch and
// the batch is stamped again from sequence 0 (restamp), at most
// maxBumpsPerBatch times; INVALID_PRODUCER_EPOCH, which a correct broker
// never answers this producer, is not retried: the batch fails (fail), and
// produceRetrying bumps the epoch for the next batch.
func (w *partitionWorker) idempotentAnswer(err error, bumps *int, records int) (restamp, fail bool, _ error) {
	attrs := []any{"topic", w.key.topic, "partition", w.key.partition, "producer_id", w.epoch.id,
		"producer_epoch", w.epoch.epoch, "sequence", w.seq, "records", records, "error", err}
	switch {
	case errors.Is(err, kafka.InvalidProducerEpoch):
		return false, true, fmt.Errorf("%w (the broker holds a newer epoch of producer id %d for %s/%d than the batch's %d; the batch fails, as with Java's idempotent producer)",
			err, w.epoch.id, w.key.topic, w.key.partition, w.epoch.epoch)
	case !sequenceLost(err):
		return false, false, err
	case *bumps >= maxBumpsPerBatch:
		w.p.log.Error("the broker refuses the partition's idempotent sequence even from sequence 0 of a new epoch; failing the batch", attrs...)
		return false, true, fmt.Errorf("%w (still after %d epoch bumps for this batch: a broker, or a proxy, that keeps refusing the producer's sequence)", err, *bumps)
	}
	*bumps++
	w.p.log.Warn("the broker lost or refused the partition's idempotent sequence; bumping the producer epoch and resending the batch from sequence 0 (if an earlier attempt of it was written, it is now written twice: at-least-once)", attrs...)
	w.p.idem.bump(w.epoch)
	return true, false, err
}

// staleLeader reports errors after which kafka-go's cached cluster layout
// must be fetched again before the retry can succeed.
func staleLeader(err error) bool {
	return errors.Is(err, kafka.NotLeaderForPartition) || errors.Is(err, kafka.LeaderNotAvailable) ||
		unknownPartition(err) || errors.Is(err, kafka.BrokerNotAvailable) ||
		errors.Is(err, kafka.FencedLeaderEpoch) || errors.Is(err, kafka.UnknownLeaderEpoch)
}

// unknownPartition: the broker does not know the partition, or kafka-go's
// cached layout of the cluster does not (it answers without asking).
func unknownPartition(err error) bool {
	return errors.Is(err, kafka.UnknownTopicOrPartition) || errors.Is(err, protocol.ErrNoPartition) || errors.Is(err, protocol.ErrNoTopic)
}
