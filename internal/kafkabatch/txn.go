package kafkabatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/segmentio/kafka-go/protocol/addpartitionstotxn"
	"github.com/segmentio/kafka-go/protocol/endtxn"
)

// Errors of TxnProducer. Each wraps the broker's error, so errors.Is with
// kafka-go's kafka.Error values works too.
var (
	// ErrFenced: another producer with the same transactional.id called
	// InitProducerId since this one did (the broker answered
	// PRODUCER_FENCED or INVALID_PRODUCER_EPOCH). It took over: this one
	// must stop, and can do nothing more.
	ErrFenced = errors.New("kafkabatch: fenced by a newer producer with the same transactional.id")
	// ErrAbortable: the current transaction cannot commit (out-of-order
	// sequence, unknown producer id, a record the broker refused, a
	// commit whose answer never came...). Call Abort, or Init when Abort
	// fails too, then produce again from the last committed position.
	ErrAbortable = errors.New("kafkabatch: the transaction must be aborted")
)

// TxnProducerConfig configures a TxnProducer, the wire level. The
// exactly-once sink's own configuration is sink/exactlyonce.Config; sink
// builds this one from it (TransactionalID, TransactionTimeout) and from
// the producer's sink.Config (the rest).
type TxnProducerConfig struct {
	// TransactionalID (Kafka's transactional.id) names the producer across
	// restarts: a new producer with the same id fences the old one.
	TransactionalID string
	// TransactionTimeout (transaction.timeout.ms, default 60 s as in Java):
	// the coordinator aborts a transaction open longer than this.
	TransactionTimeout time.Duration
	// Compression (compression.type) of the batches; default none.
	Compression Compression
	// RetryBackoff (retry.backoff.ms, default 100 ms) is the first wait
	// before a retry; it doubles up to RetryBackoffMax (retry.backoff.max.ms,
	// default 1 s). Retries last until the context ends.
	RetryBackoff, RetryBackoffMax time.Duration
	// MaxRequestSize (max.request.size, default 1 MiB) caps the batches
	// ProduceAll puts in one produce request.
	MaxRequestSize int
	// Dial, when set, opens a connection to a broker ready for requests
	// (TLS, ApiVersions, SASL as the client's): AddPartitionsToTxn and
	// EndTxn then go over the producer's own connection to the
	// transaction coordinator (txnRoundTrip), not through the Client,
	// which asks FindCoordinator before each.
	Dial func(ctx context.Context, addr string) (*protocol.Conn, error)
}

// Validate applies the defaults and checks cfg.
func (c *TxnProducerConfig) Validate() error {
	if c.TransactionalID == "" {
		return errors.New("kafkabatch: transactional.id is empty; set it (the connector name is a good one)")
	}
	if c.TransactionTimeout == 0 {
		c.TransactionTimeout = 60 * time.Second
	}
	// The broker refuses timeouts above transaction.max.timeout.ms (15
	// minutes by default) at InitProducerId; below a millisecond is a typo.
	if c.TransactionTimeout < time.Millisecond {
		return fmt.Errorf("kafkabatch: transaction.timeout.ms is %s; write a positive number of milliseconds", c.TransactionTimeout)
	}
	if c.Compression < 0 || c.Compression.Codec() == nil && c.Compression != 0 {
		return fmt.Errorf("kafkabatch: compression.type %d is unknown; write none, gzip, snappy, lz4 or zstd", c.Compression)
	}
	if c.RetryBackoff <= 0 {
		c.RetryBackoff = 100 * time.Millisecond
	}
	if c.RetryBackoffMax < c.RetryBackoff {
		c.RetryBackoffMax = max(time.Second, c.RetryBackoff)
	}
	if c.MaxRequestSize <= 0 {
		c.MaxRequestSize = 1 << 20
	}
	return nil
}

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string
	Partition int
}

type txnState int

const (
	stateUninit    txnState = iota // before Init
	stateReady                     // no transaction open
	stateInTxn                     // Begin called
	stateAbortable                 // an error: only Abort is allowed
	stateFenced                    // for good
)

// TxnProducer is a transactional producer on kafka-go's Client, as Java's
// TransactionManager (transactions version 1, which kafka-go's request
// versions speak): Init gets a producer id and epoch from the transaction
// coordinator, fencing older producers of the same transactional.id;
// Begin, Produce (adding each partition to the transaction once, numbering
// each partition's records from sequence 0 per epoch), then Commit or Abort.
//
// It is not safe for concurrent use: one goroutine drives it, and Produce
// sends one batch at a time, so sequences cannot arrive out of order.
type TxnProducer struct {
	client *kafka.Client
	cfg    TxnProducerConfig
	log    *slog.Logger

	producerID int64
	epoch      int16
	state      txnState
	bump       bool // the epoch must be bumped after the abort (sequences broke)
	added      map[TopicPartition]bool
	sequences  map[TopicPartition]int32 // next sequence, per partition, this epoch
	// startedAt is when the open transaction's first AddPartitionsToTxn
	// was sent (zero before): the coordinator's clock of the transaction
	// starts after it, so one younger than the timeout by this clock
	// cannot have been aborted for it.
	startedAt time.Time
	// first is the open transaction's first AddPartitionsToTxn (FirstAdd).
	first FirstAdd
	coord coordConn // with TxnProducerConfig.Dial: the coordinator's connection
}

// FirstAdd is what the open transaction's first AddPartitionsToTxn met:
// when it was first sent, when the coordinator accepted it (zero until
// then), and how many times in between it answered CONCURRENT_TRANSACTIONS
// (it was still writing the last transaction's markers).
type FirstAdd struct {
	Sent, Accepted time.Time
	Concurrent     int
}

// NewTxnProducer checks cfg and makes a producer. It does not connect: Init does.
func NewTxnProducer(client *kafka.Client, cfg TxnProducerConfig, log *slog.Logger) (*TxnProducer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &TxnProducer{
		client: client, cfg: cfg, log: log.With("transactional_id", cfg.TransactionalID),
		producerID: NoProducerID, epoch: NoProducerEpoch,
		added: map[TopicPartition]bool{}, sequences: map[TopicPartition]int32{},
	}, nil
}

// ProducerID and Epoch are what Init got (-1 before).
func (p *TxnProducer) ProducerID() int64 { return p.producerID }
func (p *TxnProducer) Epoch() int16      { return p.epoch }

// Init asks the transaction coordinator for a producer id and epoch
// (InitProducerId). For the transactional.id's previous producer, alive
// or not, this is the takeover: the coordinator aborts its open
// transaction and bumps the epoch, so its next request fails as fenced.
// Init retries while the coordinator loads, moves or finishes that abort.
//
// After ErrAbortable, Init is the way out that always works: with the
// current producer id and epoch it asks for a bump, and the coordinator
// first ends the transaction (a commit already under way completes,
// anything else is aborted). Read the last committed position back after it.
//
// A fenced producer may Init again, as a new producer (-1/-1): for a
// caller that holds the right to write again (the failover lock, at a new
// session), this is its own takeover from whoever fenced it.
func (p *TxnProducer) Init(ctx context.Context) error {
	switch p.state {
	case stateUninit, stateReady, stateAbortable:
	case stateFenced:
		p.producerID, p.epoch = NoProducerID, NoProducerEpoch
	default:
		return p.stateErr("InitProducerId")
	}
	// -1/-1 asks for the current id; after a sequence error the current
	// ones ask for a bump of the epoch (KIP-360).
	err := p.initProducerID(ctx, "InitProducerId", p.epoch)
	if err != nil {
		return p.fail("InitProducerId", err)
	}
	p.ready()
	p.log.Info("transactional producer ready", "producer_id", p.producerID, "epoch", p.epoch)
	return nil
}

// initProducerID sends InitProducerId with the current producer id and
// the given epoch as the expected one, retrying transient answers, and
// takes the id and epoch the coordinator answers.
func (p *TxnProducer) initProducerID(ctx context.Context, op string, epoch int16) error {
	return p.retry(ctx, op, func() error {
		res, err := p.client.InitProducerID(ctx, &kafka.InitProducerIDRequest{
			TransactionalID:      p.cfg.TransactionalID,
			TransactionTimeoutMs: int(p.cfg.TransactionTimeout.Milliseconds()),
			// kafka-go sends these from InitProducerId v3 (Kafka 2.5) on,
			// and 0/0 when they are left zero.
			ProducerID:    int(p.producerID),
			ProducerEpoch: int(epoch),
		})
		if err != nil {
			return err
		}
		if res.Error != nil {
			return res.Error
		}
		p.producerID, p.epoch = int64(res.Producer.ProducerID), int16(res.Producer.ProducerEpoch)
		return nil
	})
}

// ready is the state after an InitProducerId answered: a new epoch, its
// sequences from 0, no transaction.
func (p *TxnProducer) ready() {
	clear(p.sequences)
	clear(p.added)
	p.state, p.bump, p.startedAt = stateReady, false, time.Time{}
}

// Begin opens a transaction. Nothing is sent until the first Produce.
func (p *TxnProducer) Begin() error {
	if p.state != stateReady {
		return p.stateErr("beginning a transaction")
	}
	clear(p.added)
	p.state, p.startedAt, p.first = stateInTxn, time.Time{}, FirstAdd{}
	return nil
}

// Produce writes msgs to one partition as one batch of the open
// transaction and returns the offset of its first record. A partition is
// added to the transaction (AddPartitionsToTxn) before its first batch.
// Transient failures are retried with the same bytes (same sequence), so
// the broker writes the batch once.
func (p *TxnProducer) Produce(ctx context.Context, tp TopicPartition, msgs []Message) (int64, error) {
	if p.state != stateInTxn {
		return -1, p.stateErr("producing")
	}
	if !p.added[tp] {
		if err := p.addPartition(ctx, tp); err != nil {
			return -1, p.fail(fmt.Sprintf("AddPartitionsToTxn %s/%d", tp.Topic, tp.Partition), err)
		}
	}
	seq := p.sequences[tp]
	b, err := Build(Producer{ID: p.producerID, Epoch: p.epoch, BaseSequence: seq, Transactional: true}, p.cfg.Compression, msgs)
	if err != nil {
		return -1, err
	}
	enc, err := Encode(&b)
	if err != nil {
		return -1, err
	}
	offset := int64(-1)
	err = p.retry(ctx, "Produce", func() error {
		res, err := ProduceBatch(ctx, p.client, tp.Topic, tp.Partition, p.cfg.TransactionalID, enc)
		if err != nil {
			return err
		}
		if res.Error != nil && !errors.Is(res.Error, kafka.DuplicateSequenceNumber) {
			return res.Error
		}
		offset = res.BaseOffset // a duplicate: the broker has the batch already
		return nil
	})
	if err != nil {
		// Whether the batch was written is unknown, so its sequence may
		// be taken: after the abort, a new epoch numbers from 0 again.
		p.bump = true
		return -1, p.fail(fmt.Sprintf("producing %d records to %s/%d at sequence %d", len(msgs), tp.Topic, tp.Partition, seq), err)
	}
	p.sequences[tp] = IncrementSequence(seq, int32(len(msgs)))
	return offset, nil
}

func (p *TxnProducer) addPartition(ctx context.Context, tp TopicPartition) error {
	return p.addPartitions(ctx, []TopicPartition{tp})
}

// AddPartitions adds the partitions not yet in the open transaction in
// one AddPartitionsToTxn request, so that producing to them needs no
// request of its own: one round trip for a transaction's partitions.
func (p *TxnProducer) AddPartitions(ctx context.Context, tps []TopicPartition) error {
	if p.state != stateInTxn {
		return p.stateErr("adding partitions")
	}
	var todo []TopicPartition
	for _, tp := range tps {
		if !p.added[tp] {
			todo = append(todo, tp)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	if err := p.addPartitions(ctx, todo); err != nil {
		return p.fail(fmt.Sprintf("AddPartitionsToTxn (%d partitions)", len(todo)), err)
	}
	return nil
}

// FirstAdd says what the open (or last) transaction's first
// AddPartitionsToTxn met.
func (p *TxnProducer) FirstAdd() FirstAdd { return p.first }

func (p *TxnProducer) addPartitions(ctx context.Context, tps []TopicPartition) error {
	first := p.startedAt.IsZero()
	if first {
		p.startedAt = time.Now()
		p.first.Sent = p.startedAt
	}
	err := p.retry(ctx, opAddPartitions, func() error {
		req := &addpartitionstotxn.Request{TransactionalID: p.cfg.TransactionalID, ProducerID: p.producerID, ProducerEpoch: p.epoch}
		index := map[string]int{}
		for _, tp := range tps {
			if p.added[tp] {
				continue
			}
			i, ok := index[tp.Topic]
			if !ok {
				i = len(req.Topics)
				index[tp.Topic] = i
				req.Topics = append(req.Topics, addpartitionstotxn.RequestTopic{Name: tp.Topic})
			}
			req.Topics[i].Partitions = append(req.Topics[i].Partitions, int32(tp.Partition))
		}
		m, err := p.txnRoundTrip(ctx, req)
		if err != nil {
			return err
		}
		res, ok := m.(*addpartitionstotxn.Response)
		if !ok {
			return fmt.Errorf("AddPartitionsToTxn answered %T", m)
		}
		var first error
		for _, t := range res.Results {
			for _, r := range t.Results {
				if r.ErrorCode == 0 {
					p.added[TopicPartition{Topic: t.Name, Partition: int(r.PartitionIndex)}] = true
				} else if err := kafka.Error(r.ErrorCode); first == nil || !errors.Is(err, kafka.Error(55)) {
					first = err // 55 OPERATION_NOT_ATTEMPTED only follows another's error
				}
			}
		}
		if first != nil {
			p.dropCoordinator(first)
			return first
		}
		for _, tp := range tps {
			if !p.added[tp] {
				return fmt.Errorf("the coordinator's answer does not name %s/%d", tp.Topic, tp.Partition)
			}
		}
		return nil
	})
	if err == nil && first {
		p.first.Accepted = time.Now()
	}
	return err
}

// Commit ends the open transaction with a commit (EndTxn). Once it
// returns nil the transaction is committed for good; read_committed
// readers see its records as soon as the coordinator has written the
// markers, a moment later (so with Java's producer too).
func (p *TxnProducer) Commit(ctx context.Context) error {
	if p.state != stateInTxn {
		return p.stateErr("committing")
	}
	if err := p.endTxn(ctx, true); err != nil {
		return p.fail("EndTxn (commit)", err)
	}
	p.state = stateReady
	return nil
}

// Abort ends the open transaction with an abort (EndTxn): read_committed
// readers never see its records. It is the way out of ErrAbortable; after a
// broken sequence it also bumps the epoch (Init), so numbering restarts.
func (p *TxnProducer) Abort(ctx context.Context) error {
	if p.state != stateInTxn && p.state != stateAbortable {
		return p.stateErr("aborting")
	}
	if err := p.endTxn(ctx, false); err != nil {
		return p.fail("EndTxn (abort)", err)
	}
	p.state = stateReady
	if p.bump {
		return p.Init(ctx)
	}
	return nil
}

// endTxn sends EndTxn, unless no partition was added: the coordinator
// knows no transaction then (Java's producer skips it too).
func (p *TxnProducer) endTxn(ctx context.Context, commit bool) error {
	if len(p.added) == 0 {
		return nil
	}
	return p.retry(ctx, "EndTxn", func() error {
		m, err := p.txnRoundTrip(ctx, &endtxn.Request{TransactionalID: p.cfg.TransactionalID, ProducerID: p.producerID, ProducerEpoch: p.epoch, Committed: commit})
		if err != nil {
			return err
		}
		res, ok := m.(*endtxn.Response)
		if !ok {
			return fmt.Errorf("EndTxn answered %T", m)
		}
		if res.ErrorCode != 0 {
			err := kafka.Error(res.ErrorCode)
			p.dropCoordinator(err)
			return err
		}
		return nil
	})
}
