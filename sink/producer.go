package sink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/outboxrelay/outboxrelay/internal/kafkaread"
	"github.com/outboxrelay/outboxrelay/router"
)

// Producer sends records to Kafka with acks=all and reports each record's
// fate exactly once through the callback given to Send.
//
// Order: records for one partition are written in Send order, one batch in
// flight per partition; a batch that fails transiently is retried (forever,
// capped exponential backoff) before anything after it is sent, so records
// with one key reach their partition in Send order across retries and broker
// outages. kafka-go's Writer does not give this: see doc.go.
type Producer struct {
	cfg       Config
	log       *slog.Logger
	transport *kafka.Transport
	client    *kafka.Client
	// fetches reads the offsets topic read_committed (Offsets.Load)
	// through kafkaread.FetchTransport, which decodes in the calling
	// goroutine: a broker's answer that panics kafka-go's decoder
	// (segmentio/kafka-go#1438) is an error, where kafka.Transport's
	// goroutines would end the process.
	fetches *kafka.Client
	budget  *budget
	wire    wireConns    // each partition's connection to its leader (wire.go)
	idem    *idempotence // nil with enable.idempotence=false

	// ctx is cancelled by Close; every goroutine of the producer exits on it.
	ctx    context.Context
	cancel context.CancelFunc
	start  time.Time // NewProducer's time, the origin of since
	wg     sync.WaitGroup

	mu      sync.Mutex // guards the fields below
	closed  bool
	topics  map[string]*topicState
	workers map[topicPartition]*partitionWorker

	refreshMu   sync.Mutex
	lastRefresh time.Time

	obs Observer // nopObserver unless SetObserver; set before the first Send
}

type topicPartition struct {
	topic     string
	partition int
}

// NewProducer checks cfg and prepares a producer. It does not connect:
// connections, and one goroutine per partition written to, start with the
// first Send. Call Close to stop them.
func NewProducer(cfg Config, log *slog.Logger) (*Producer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t, err := cfg.transport()
	if err != nil {
		return nil, fmt.Errorf("sink: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Producer{
		cfg:       cfg,
		log:       log.With("component", "sink"),
		transport: t,
		client:    &kafka.Client{Addr: kafka.TCP(cfg.Brokers...), Transport: t, Timeout: cfg.RequestTimeout},
		fetches:   &kafka.Client{Addr: kafka.TCP(cfg.Brokers...), Transport: &kafkaread.FetchTransport{Brokers: cfg.Brokers, Dialer: cfg.dialer(t)}, Timeout: cfg.RequestTimeout},
		budget:    newBudget(cfg.BufferMemory),
		ctx:       ctx,
		cancel:    cancel,
		start:     time.Now(),
		topics:    make(map[string]*topicState),
		workers:   make(map[topicPartition]*partitionWorker),
		obs:       nopObserver{},
	}
	if !cfg.DisableIdempotence {
		p.idem = &idempotence{p: p, log: p.log, cur: noProducerEpoch()}
	}
	return p, nil
}

// Send hands r to the producer. When it returns nil, onAck is called exactly
// once, later, from a producer goroutine: with nil once every in-sync
// replica has the record, or with the reason it never will (a *RecordError
// for a record Kafka refuses, ErrClosed when Close came first). When Send
// returns an error the record was not taken and onAck is never called.
//
// Send copies r's bytes, so the caller may reuse its buffers at once. It
// blocks only while buffer.memory is full, until ctx ends. A record over
// max.request.size is refused here with a *RecordError wrapping
// ErrRecordTooLarge.
//
// onAck must return quickly and must not call Send, Flush or Close: hand the
// result to your own goroutine. Callbacks for one partition run in order.
func (p *Producer) Send(ctx context.Context, r router.Record, onAck func(error)) error {
	if onAck == nil {
		return errors.New("sink: Send needs an onAck callback")
	}
	if r.Topic == "" {
		return &RecordError{Partition: r.Partition, EventID: r.EventID, Err: errors.New("empty topic name")}
	}
	if r.Partition < -1 {
		return &RecordError{Topic: r.Topic, Partition: -1, EventID: r.EventID, Err: fmt.Errorf("%w: %d", ErrNoSuchPartition, r.Partition)}
	}
	size, err := SizeOf(r, p.cfg.MaxRequestSize)
	if err != nil {
		return err
	}
	if err := p.budget.acquire(ctx, p.ctx, int64(size)); err != nil {
		return fmt.Errorf("sink: sending event id %q: %w", r.EventID, err)
	}
	pe := newPending(r, size, onAck)

	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.budget.release(int64(size))
		return ErrClosed
	}
	ts := p.topics[r.Topic]
	if ts == nil {
		ts = &topicState{sticky: -1}
		p.topics[r.Topic] = ts
	}
	refused := p.routeLocked(r.Topic, ts, pe)
	p.mu.Unlock()
	if refused {
		p.ack(pe, ErrClosed)
	}
	return nil
}

// routeLocked queues pe on its partition's worker, or behind the topic's
// metadata lookup when the partition count is unknown, stale or too small
// for pe's explicit partition. Records never overtake the lookup, so one
// key's order holds across it. Called with p.mu held; it reports whether pe
// was refused because the producer is closing.
func (p *Producer) routeLocked(topic string, ts *topicState, pe *pending) bool {
	if len(ts.pending) > 0 || ts.partitions == nil || time.Since(ts.resolvedAt) > p.cfg.MetadataMaxAge || pe.Partition >= len(ts.partitions) {
		ts.pending = append(ts.pending, pe)
		if !ts.resolving {
			ts.resolving = true
			p.wg.Add(1)
			go p.resolve(topic)
		}
		return false
	}
	if pe.Partition < 0 {
		pe.Partition = ts.choose(pe, p.cfg.BatchBytes)
	}
	return !p.workerLocked(topic, pe.Partition).push(pe)
}

func (p *Producer) workerLocked(topic string, partition int) *partitionWorker {
	key := topicPartition{topic, partition}
	w := p.workers[key]
	if w == nil {
		w = newPartitionWorker(p, key)
		p.workers[key] = w
		p.wg.Add(1)
		go w.run()
	}
	return w
}

// ack reports pe's fate and frees its room in the budget.
func (p *Producer) ack(pe *pending, err error) {
	if err != nil && !errors.Is(err, ErrClosed) {
		var re *RecordError
		if !errors.As(err, &re) {
			err = &RecordError{Topic: pe.Topic, Partition: pe.Partition, EventID: pe.EventID, Err: explain(err)}
		}
	}
	// The bytes first: a caller that bounds its own in-flight bytes by
	// buffer.memory may send again as soon as onAck returns, and must not
	// find the buffer still full. The record after: Flush returns only
	// once every onAck has returned.
	p.budget.releaseBytes(int64(pe.Size))
	pe.OnAck(err)
	p.budget.releaseRecord()
}

// Flush waits until every record sent so far has been acknowledged (its
// onAck has returned), or ctx ends. Under an outage it waits as long as the
// outage lasts: bound it with ctx.
func (p *Producer) Flush(ctx context.Context) error {
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		return ErrClosed
	}
	if err := p.budget.waitEmpty(ctx); err != nil {
		n, b := p.budget.inFlight()
		return fmt.Errorf("sink: flushing (%d records, %d bytes unacknowledged): %w", n, b, err)
	}
	return nil
}

// Close stops every goroutine of the producer and closes its connections.
// Records not yet acknowledged get ErrClosed (they may or may not be in
// Kafka). Call Flush first for an orderly stop. Close is idempotent.
func (p *Producer) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	p.cancel()
	p.wg.Wait()
	p.wire.closeAll()
	p.transport.CloseIdleConnections()
	return nil
}

// since is the monotonic time since the producer was made: a record's
// queue time in 8 bytes instead of a time.Time's 24 (a pending record
// lives as long as it is in flight, and there may be many).
func (p *Producer) since() time.Duration { return time.Since(p.start) }

// InFlight reports the records and bytes sent and not yet acknowledged.
func (p *Producer) InFlight() (records int, bytes int64) { return p.budget.inFlight() }

// refreshMetadata makes the next request fetch the cluster layout afresh.
// kafka-go's Transport serves metadata from a cache refreshed every few
// seconds and offers no "refresh now"; dropping its connection pool does
// that. Rate-limited: leader changes fail many batches at once.
func (p *Producer) refreshMetadata() { p.refreshOlderThan(time.Second) }

// refreshMetadataNow is refreshMetadata without the rate limit, for an
// answer that must be fresh: before calling a topic or partition missing.
// A refresh a moment ago may predate the topic's creation.
func (p *Producer) refreshMetadataNow() { p.refreshOlderThan(0) }

func (p *Producer) refreshOlderThan(age time.Duration) {
	p.refreshMu.Lock()
	defer p.refreshMu.Unlock()
	if age > 0 && time.Since(p.lastRefresh) < age {
		return
	}
	p.lastRefresh = time.Now()
	p.transport.CloseIdleConnections()
}

// backoff returns the wait before retry number attempt (1-based): capped
// exponential with jitter, so many partitions do not retry in lockstep.
func (p *Producer) backoff(attempt int) time.Duration {
	d := p.cfg.RetryBackoff
	for i := 1; i < attempt && d < p.cfg.RetryBackoffMax; i++ {
		d *= 2
	}
	d = min(d, p.cfg.RetryBackoffMax)
	return d - time.Duration(rand.Int64N(int64(d)/5+1))
}

// sleep waits d or until the producer closes; false means closing.
func (p *Producer) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-p.ctx.Done():
		return false
	}
}

// retryLog logs a retry loop without flooding: the first failure, then at
// most every 10 s, and the recovery.
type retryLog struct {
	log     *slog.Logger
	what    string
	attrs   []any
	since   time.Time
	last    time.Time
	attempt int
}

func (r *retryLog) failed(err error, wait time.Duration) {
	now := time.Now()
	r.attempt++
	if r.since.IsZero() {
		r.since = now
	}
	if r.attempt == 1 || now.Sub(r.last) >= 10*time.Second {
		r.last = now
		r.log.Warn("retrying "+r.what, append([]any{"error", explain(err), "attempt", r.attempt, "failing_since", r.since, "next_in", wait}, r.attrs...)...)
	}
}

func (r *retryLog) recovered() {
	if r.attempt > 0 {
		r.log.Info(r.what+" recovered", append([]any{"attempts", r.attempt + 1, "failing_since", r.since, "outage", time.Since(r.since).Round(time.Millisecond)}, r.attrs...)...)
	}
}
