// Package exactlyonce is the exactly-once sink
// (exactly.once.support=required, DESIGN.md invariant 10): Sink writes the
// records of whole PostgreSQL transactions, and last the offsets-topic
// record of the position after them, in one Kafka transaction, so that a
// read_committed reader sees both or neither; Delivery is the relay's
// relay.Delivery on it. One worker goroutine (worker.go) drives the
// transactional producer (internal/kafkabatch.TxnProducer): it batches per
// partition, commits at a PostgreSQL transaction's end (boundary), holds
// back the records of one not yet ended, and tells a coordinator's
// timeout abort from a takeover by another instance (timeout.go).
//
// It is built on package sink's producer (its connections, configuration
// and partition counts) and offsets topic; sink does not import it.
package exactlyonce

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/outboxrelay/outboxrelay/capture"
	"github.com/outboxrelay/outboxrelay/internal/kafkabatch"
	"github.com/outboxrelay/outboxrelay/internal/terminal"
	"github.com/outboxrelay/outboxrelay/router"
	"github.com/outboxrelay/outboxrelay/sink"
)

// Errors of the transactional sink. A failure of a Kafka transaction is
// one of them, wrapping the broker's error; each is marked (package
// terminal) with what it means for the relay: fenced and rejected end it,
// aborted ends the session.
var (
	// ErrFenced: another producer with the same transactional.id took
	// over (InitProducerId since ours): this instance must stop.
	ErrFenced = terminal.Final(errors.New("sink: fenced by a newer producer with the same transactional.id"))
	// ErrAborted: the Kafka transaction was aborted (a sequence the
	// broker refused, an unknown producer id, a commit whose answer never
	// came, ...). Nothing of it is visible to read_committed readers;
	// relaying resumes from the last committed position.
	ErrAborted = terminal.Session(errors.New("sink: the Kafka transaction was aborted; resuming from the last committed position"))
	// ErrRejected: Kafka refused the transaction for a reason a retry
	// does not cure (a record too large for the topic, a missing ACL, a
	// transaction.timeout.ms the broker does not allow): the relay stops,
	// and the error names what to change.
	ErrRejected = terminal.Final(errors.New("sink: Kafka refused the transaction permanently"))
)

// Transaction boundaries (transaction.boundary).
const (
	BoundaryPoll     = "poll"     // commit what is at hand whenever the last commit is done
	BoundaryInterval = "interval" // commit every transaction.boundary.interval.ms
)

// Config is the exactly-once sink's configuration: the keys of Kafka
// transactions (internal/setup parses them), and how much it holds back.
type Config struct {
	TransactionalID string        // transactional.id; the connector's name by default
	Timeout         time.Duration // transaction.timeout.ms, default 60 s
	Boundary        string        // transaction.boundary: poll (default) or interval
	Interval        time.Duration // transaction.boundary.interval.ms (interval only), default offset.flush.interval.ms
	// CarryRecords and CarryBytes bound the records after the last
	// boundary held back unacknowledged (default 5,000 and 1 MiB of
	// kafkabatch.RecordSize): set them to half of the caller's in-flight
	// budget, or a PostgreSQL transaction larger than the budget never
	// finishes.
	CarryRecords, CarryBytes int
}

// Sink writes records in Kafka transactions (exactly-once): each Kafka
// transaction holds the records of whole PostgreSQL transactions (a
// Boundary ends one), and, last, the offsets-topic record of the last
// boundary's position; a read_committed reader sees the records and the
// position together or not at all.
//
// Send hands a record over. The ack is called once the record is written
// to its partition inside the open transaction (or with the reason it
// never will be): it frees the caller's budget; what is committed is
// Committed. One goroutine (the worker) drives the transactional producer.
// Send, Boundary, Flush and Start belong to one caller goroutine.
type Sink struct {
	p       *sink.Producer // topics and partition counts
	pcfg    sink.Config    // the producer's: linger.ms, batch.size, max.request.size, metadata.max.age.ms
	cfg     Config
	log     *slog.Logger
	txn     txnProducer
	offsets *sink.Offsets
	// load reads the last committed position back (Offsets.Load).
	load func(context.Context) (sink.Offset, bool, error)

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu         sync.Mutex
	wake       chan struct{} // signalled when queue grows or a flush is wanted
	changed    chan struct{} // closed and replaced when a commit or failure happens
	queue      []txnItem
	boundaries int64 // boundaries queued so far (their sequence numbers)
	flushWant  int64 // commit at least up to this boundary now
	committed  int64 // the last boundary committed
	pos        capture.LSN
	pending    int // records sent and not committed
	broken     error
	origin     string                              // the session's server and timeline, recorded with each position
	gen        int64                               // the session: Start increments it; take returns it with its items
	holder     func(context.Context) (bool, error) // SetHolder's check of the failover lock

	w txnWorker // the worker's own state; under workMu
	// workMu is held by the worker during a round and by Start.
	workMu sync.Mutex
}

// txnProducer is what the worker needs of kafkabatch.TxnProducer (a fake
// in the unit tests).
type txnProducer interface {
	Init(ctx context.Context) error
	Begin() error
	Produce(ctx context.Context, tp kafkabatch.TopicPartition, msgs []kafkabatch.Message) (int64, error)
	ProduceAll(ctx context.Context, batches []kafkabatch.PartitionBatch) error
	Commit(ctx context.Context) error
	Abort(ctx context.Context) error
	ResumeAfterTimeout(ctx context.Context) (bool, error)
	FirstAdd() kafkabatch.FirstAdd
	Close() error
}

// txnItem is what Send and Boundary queue for the worker: a record, or a
// boundary with its sequence number and position.
type txnItem struct {
	rec      *kafkabatch.Pending // nil for a boundary
	seq      int64               // a boundary's sequence number
	position capture.LSN         // a boundary's position (0: none)
}

// New makes an exactly-once sink on p's connections and configuration,
// recording positions in offsets. It does not connect: Start does.
func New(p *sink.Producer, offsets *sink.Offsets, cfg Config, log *slog.Logger) (*Sink, error) {
	if cfg.Boundary == "" {
		cfg.Boundary = BoundaryPoll
	}
	if cfg.Boundary != BoundaryPoll && cfg.Boundary != BoundaryInterval {
		return nil, fmt.Errorf("exactly-once: transaction.boundary=%s: write poll or interval", cfg.Boundary)
	}
	if cfg.Boundary == BoundaryInterval && cfg.Interval <= 0 {
		return nil, errors.New("exactly-once: transaction.boundary=interval needs a positive transaction.boundary.interval.ms")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	txn, err := p.TxnProducer(cfg.TransactionalID, cfg.Timeout, log)
	if err != nil {
		return nil, err
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 60 * time.Second
	}
	if cfg.CarryRecords <= 0 {
		cfg.CarryRecords = 5000
	}
	if cfg.CarryBytes <= 0 {
		cfg.CarryBytes = carryLimit
	}
	s := newSink(p.Config(), cfg, log, txn, offsets)
	s.p, s.load = p, offsets.Load
	s.w.parts = map[string]topicParts{}
	go s.work()
	return s, nil
}

// newSink is a Sink on txn, its worker not started.
func newSink(pcfg sink.Config, cfg Config, log *slog.Logger, txn txnProducer, offsets *sink.Offsets) *Sink {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Sink{pcfg: pcfg, cfg: cfg, log: log.With("component", "txn-sink", "transactional_id", cfg.TransactionalID), txn: txn, offsets: offsets,
		ctx: ctx, cancel: cancel, done: make(chan struct{}), wake: make(chan struct{}, 1), changed: make(chan struct{})}
	s.w = txnWorker{s: s, markers: -1}
	return s
}

// Send queues r for the next transaction; its ack comes once it is
// written inside it (nil), or with the reason it never will be. After a
// failure it refuses records until Start.
func (s *Sink) Send(ctx context.Context, r router.Record, onAck func(error)) error {
	if r.Topic == "" {
		return &sink.RecordError{Partition: r.Partition, EventID: r.EventID, Err: errors.New("empty topic name")}
	}
	size, err := sink.SizeOf(r, s.pcfg.MaxRequestSize)
	if err != nil {
		return err
	}
	rec := kafkabatch.Take(r, size, onAck)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken != nil {
		return s.broken
	}
	s.queue = append(s.queue, txnItem{rec: &rec})
	s.pending++
	s.signal()
	return nil
}

// Boundary ends a PostgreSQL transaction (or marks a point between
// records where a commit may fall, position 0): what was sent before may
// be committed, with position recorded in the offsets topic.
func (s *Sink) Boundary(position capture.LSN) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken != nil {
		return
	}
	s.boundaries++
	s.queue = append(s.queue, txnItem{seq: s.boundaries, position: position})
	s.signal()
}

// signal wakes the worker (s.mu held); a wake already pending suffices.
func (s *Sink) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Committed returns the position the last Kafka commit recorded, and
// whether every record sent is committed (then anything acknowledged is).
func (s *Sink) Committed() (position capture.LSN, all bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pos, s.broken == nil && s.pending == 0
}

// Err is the failure that ended the sink's transactions, if any:
// ErrFenced or ErrAborted, wrapped.
func (s *Sink) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.broken
}

// Flush commits everything up to the last boundary sent and waits for
// it. Records after it (a PostgreSQL transaction not finished) stay out.
func (s *Sink) Flush(ctx context.Context) error {
	s.mu.Lock()
	want := s.boundaries
	s.flushWant = max(s.flushWant, want)
	s.signal()
	for s.committed < want && s.broken == nil {
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("sink: committing the Kafka transaction: %w", ctx.Err())
		}
		s.mu.Lock()
	}
	err := s.broken
	s.mu.Unlock()
	return err
}

// notifyLocked wakes Flush waiters.
func (s *Sink) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Start begins a session: it drops what a failed or stopped session left
// (aborting its open transaction), gets the producer id and epoch
// (InitProducerId, at every session: each is a takeover, fencing an older
// instance and ending any transaction open at the coordinator, as
// Connect's tasks call initTransactions at every start), and reads back,
// read_committed, the last committed position. A fenced sink stays fenced.
func (s *Sink) Start(ctx context.Context) (sink.Offset, bool, error) {
	if err := s.lockWorker(ctx); err != nil {
		return sink.Offset{}, false, fmt.Errorf("sink: starting a session: waiting for the last Kafka transaction's round: %w", err)
	}
	defer s.workMu.Unlock()
	return s.startLocked(ctx)
}

// lockWorker takes workMu, or gives up when ctx ends first (the worker
// retries a round until Kafka answers or the sink closes).
func (s *Sink) lockWorker(ctx context.Context) error {
	got := make(chan struct{})
	go func() {
		s.workMu.Lock()
		close(got)
	}()
	select {
	case <-got:
		return nil
	case <-ctx.Done():
		go func() {
			<-got
			s.workMu.Unlock()
		}()
		return ctx.Err()
	}
}

// startLocked is Start, with workMu held.
func (s *Sink) startLocked(ctx context.Context) (sink.Offset, bool, error) {
	s.mu.Lock()
	s.gen++ // what the worker took before this belongs to the last session
	if errors.Is(s.broken, ErrFenced) {
		err := s.broken
		s.mu.Unlock()
		return sink.Offset{}, false, err
	}
	queued := s.queue
	s.queue, s.pending = nil, 0
	s.committed, s.flushWant = s.boundaries, s.boundaries
	s.mu.Unlock()
	for _, it := range queued {
		if it.rec != nil {
			it.rec.OnAck(ErrAborted)
		}
	}
	s.w.drop(ErrAborted)
	if err := s.w.reset(ctx); err != nil {
		return sink.Offset{}, false, err
	}
	pos, found, err := s.load(ctx)
	if err != nil {
		return sink.Offset{}, false, err
	}
	s.mu.Lock()
	s.broken, s.pos = nil, pos.LSN
	s.mu.Unlock()
	return pos, found, nil
}

// Close stops the worker first (ending a round that retries while Kafka
// is down), then aborts an open transaction, best effort, within 5 s.
func (s *Sink) Close() error {
	s.cancel()
	<-s.done
	s.workMu.Lock()
	defer s.workMu.Unlock()
	if s.w.open {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = s.txn.Abort(ctx)
		cancel()
		s.w.open = false
	}
	return s.txn.Close()
}

// fail ends the sink's transactions with err: queued records get it as
// their ack, Send refuses new ones until Start.
func (s *Sink) fail(err error) {
	s.mu.Lock()
	if s.broken == nil {
		s.broken = err
		s.notifyLocked()
	}
	queued := s.queue
	s.queue = nil
	s.mu.Unlock()
	for _, it := range queued {
		if it.rec != nil {
			it.rec.OnAck(err)
		}
	}
}

// take waits for queued items, or until wait passes when wait > 0. It
// returns them with the flush wanted and the session they belong to.
func (s *Sink) take(wait time.Duration) ([]txnItem, int64, int64, bool) {
	var timer <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timer = t.C
	}
	for {
		if s.ctx.Err() != nil {
			return nil, 0, 0, false
		}
		s.mu.Lock()
		gen := s.gen
		if len(s.queue) > 0 || s.flushWant > s.committed && s.broken == nil {
			items, fw := s.queue, s.flushWant
			s.queue = nil
			s.mu.Unlock()
			return items, fw, gen, true
		}
		fw := s.flushWant
		s.mu.Unlock()
		select {
		case <-s.wake:
		case <-timer:
			return nil, fw, gen, true
		case <-s.ctx.Done():
			return nil, 0, 0, false
		}
	}
}

// work is the worker goroutine: one round of the transaction per take.
func (s *Sink) work() {
	defer close(s.done)
	for {
		s.workMu.Lock()
		wait, linger := s.w.wait(), s.w.linger()
		s.workMu.Unlock()
		if linger > 0 && !s.sleep(linger) {
			return
		}
		items, flushWant, gen, ok := s.take(wait)
		if !ok {
			return
		}
		s.workMu.Lock()
		s.step(items, flushWant, gen)
		s.workMu.Unlock()
	}
}

// step runs one round on what take returned, with workMu held; items of
// an earlier session (or a failed sink) are acknowledged with the reason.
func (s *Sink) step(items []txnItem, flushWant, gen int64) {
	if err := s.stale(gen); err != nil {
		for _, it := range items {
			if it.rec != nil {
				it.rec.OnAck(err)
			}
		}
	} else if err := s.w.round(items, flushWant); err != nil {
		s.w.failed(err)
	}
}

// stale says why items taken in session gen may not join a transaction:
// the sink failed, or a Start began another session since (it aborted
// the last one's records, and its position does not cover them).
func (s *Sink) stale(gen int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken != nil {
		return s.broken
	}
	if gen != s.gen {
		return ErrAborted
	}
	return nil
}

// sleep waits d, or until the sink closes (false).
func (s *Sink) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.ctx.Done():
		return false
	}
}

// committedUpTo records a commit: the boundary seq with position pos
// (0: keep the last one), n records.
func (s *Sink) committedUpTo(seq int64, pos capture.LSN, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.committed = max(s.committed, seq)
	if pos > 0 {
		s.pos = pos
	}
	s.pending -= n
	s.notifyLocked()
}

// SetOrigin names the server and timeline ("<system id>/<timeline>") of
// the positions this session's transactions record.
func (s *Sink) SetOrigin(origin string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.origin = origin
}

func (s *Sink) originNow() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.origin
}

// Offsets is the store of the position the transactions record.
func (s *Sink) Offsets() *sink.Offsets { return s.offsets }
