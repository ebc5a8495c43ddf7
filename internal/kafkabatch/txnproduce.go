package kafkabatch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	metadataAPI "github.com/segmentio/kafka-go/protocol/metadata"
	produceAPI "github.com/segmentio/kafka-go/protocol/produce"
	"github.com/segmentio/kafka-go/protocol/rawproduce"
)

// PartitionBatch is one partition's records for ProduceAll.
type PartitionBatch struct {
	TP   TopicPartition
	Msgs []Message
}

// defaultProduceTimeout is the broker's acks timeout of a produce request
// when the client has no timeout (kafka-go's, for its own produce calls).
const defaultProduceTimeout = 500 * time.Millisecond

// ProduceAll writes each batch, one per partition, as one record batch of
// the open transaction: the partitions not yet in it are added first in
// one AddPartitionsToTxn, then the batches of all partitions one broker
// leads go in one produce request (several when they exceed
// TxnProducerConfig.MaxRequestSize), and the requests to different brokers are
// sent at once. So a transaction's records and its position record cost
// one round trip per broker, not one per partition. A partition refused
// with a transient error (its leader moved, say) is sent again with the
// same bytes, alone with the others still unwritten; the ones written stay
// written. As Produce, any failure makes the transaction abortable.
func (p *TxnProducer) ProduceAll(ctx context.Context, batches []PartitionBatch) error {
	if p.state != stateInTxn {
		return p.stateErr("producing")
	}
	tps := make([]TopicPartition, len(batches))
	seen := make(map[TopicPartition]bool, len(batches))
	for i, b := range batches {
		if seen[b.TP] {
			return fmt.Errorf("kafkabatch: ProduceAll: two batches for %s/%d; merge them", b.TP.Topic, b.TP.Partition)
		}
		seen[b.TP], tps[i] = true, b.TP
	}
	if err := p.AddPartitions(ctx, tps); err != nil {
		return err
	}
	sends := make([]*txnSend, len(batches))
	for i, b := range batches {
		seq := p.sequences[b.TP]
		rb, err := Build(Producer{ID: p.producerID, Epoch: p.epoch, BaseSequence: seq, Transactional: true}, p.cfg.Compression, b.Msgs)
		if err != nil {
			return err
		}
		enc, err := Encode(&rb)
		if err != nil {
			return err
		}
		sends[i] = &txnSend{tp: b.TP, seq: seq, n: len(b.Msgs), batch: enc}
	}
	if err := p.retry(ctx, "Produce", func() error { return p.sendAll(ctx, sends) }); err != nil {
		p.bump = true // whether the unanswered batches were written is unknown
		return p.fail(fmt.Sprintf("producing %d batches (%s/%d at sequence %d first)", len(sends), sends[0].tp.Topic, sends[0].tp.Partition, sends[0].seq), err)
	}
	for _, s := range sends {
		p.sequences[s.tp] = IncrementSequence(s.seq, int32(s.n))
	}
	return nil
}

// txnSend is one partition's encoded batch in ProduceAll, and its fate so
// far: written (done), or the error of its last attempt.
type txnSend struct {
	tp    TopicPartition
	seq   int32
	n     int
	batch []byte // encoded for this ProduceAll alone: kafka-go may still read it after a cancelled RoundTrip returned
	done  bool
	err   error
}

// sendAll sends the batches not yet written, grouped by leader, the
// groups at once; nil once every batch is written. Otherwise the error
// says what the retry decides on: the first one no retry cures, else the
// first transient one.
func (p *TxnProducer) sendAll(ctx context.Context, sends []*txnSend) error {
	var todo []*txnSend
	for _, s := range sends {
		if !s.done {
			s.err = nil
			todo = append(todo, s)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	reqs, err := p.groupByLeader(ctx, todo)
	if err != nil {
		return err
	}
	if len(reqs) == 1 {
		p.sendOne(ctx, reqs[0])
	} else {
		var wg sync.WaitGroup
		for _, r := range reqs {
			wg.Go(func() { p.sendOne(ctx, r) })
		}
		wg.Wait()
	}
	var transient error
	for _, s := range todo {
		switch {
		case s.done:
		case classify(s.err) != classRetry:
			return s.err
		case transient == nil:
			transient = s.err
		}
	}
	if errors.Is(transient, kafka.NotLeaderForPartition) {
		p.refreshMetadata() // the retry groups by the leaders known then
	}
	return transient
}

// groupByLeader splits sends into produce requests by leader, as
// kafka-go's cached metadata names them (groupSends).
func (p *TxnProducer) groupByLeader(ctx context.Context, sends []*txnSend) ([][]*txnSend, error) {
	var topics []string
	seen := map[string]bool{}
	for _, s := range sends {
		if !seen[s.tp.Topic] {
			seen[s.tp.Topic] = true
			topics = append(topics, s.tp.Topic)
		}
	}
	leaders, err := p.leaders(ctx, topics)
	if err != nil {
		return nil, err
	}
	return groupSends(sends, leaders, p.cfg.MaxRequestSize), nil
}

// groupSends puts sends into requests: one per leader, each with at most
// maxSize bytes of batches (a larger batch goes alone); a partition of
// unknown leader goes alone, and kafka-go's routing answers why.
func groupSends(sends []*txnSend, leaders map[TopicPartition]int32, maxSize int) [][]*txnSend {
	var reqs [][]*txnSend
	open := map[int32]int{} // leader: index of its request being filled
	size := map[int32]int{}
	for _, s := range sends {
		l, ok := leaders[s.tp]
		if !ok {
			reqs = append(reqs, []*txnSend{s})
			continue
		}
		i, ok := open[l]
		if !ok || size[l]+len(s.batch) > maxSize {
			i, size[l] = len(reqs), 0
			open[l] = i
			reqs = append(reqs, nil)
		}
		reqs[i] = append(reqs[i], s)
		size[l] += len(s.batch)
	}
	return reqs
}

// leaders is each known partition's leader in kafka-go's cached metadata
// (answered from the Transport's cache, without a request).
func (p *TxnProducer) leaders(ctx context.Context, topics []string) (map[TopicPartition]int32, error) {
	r, err := p.transport().RoundTrip(ctx, p.client.Addr, &metadataAPI.Request{TopicNames: topics})
	if err != nil {
		return nil, fmt.Errorf("fetching metadata of %v: %w", topics, err)
	}
	res, ok := r.(*metadataAPI.Response)
	if !ok {
		return nil, fmt.Errorf("a metadata request answered %T", r)
	}
	out := map[TopicPartition]int32{}
	for _, t := range res.Topics {
		if t.ErrorCode != 0 {
			continue
		}
		for _, part := range t.Partitions {
			if part.LeaderID >= 0 {
				out[TopicPartition{Topic: t.Name, Partition: int(part.PartitionIndex)}] = part.LeaderID
			}
		}
	}
	return out, nil
}

// sendOne sends one produce request with sends' batches and records each
// partition's answer in its txnSend.
func (p *TxnProducer) sendOne(ctx context.Context, sends []*txnSend) {
	if p.client.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.client.Timeout)
		defer cancel()
	}
	req := &rawproduce.Request{TransactionalID: p.cfg.TransactionalID, Acks: int16(kafka.RequireAll), Timeout: int32(produceTimeout(ctx, p.client.Timeout).Milliseconds())}
	index := map[string]int{}
	for _, s := range sends {
		i, ok := index[s.tp.Topic]
		if !ok {
			i = len(req.Topics)
			index[s.tp.Topic] = i
			req.Topics = append(req.Topics, rawproduce.RequestTopic{Topic: s.tp.Topic})
		}
		rs := new(RecordSet) // the batch prefixed by its size, not a copy of it
		rs.Reset(s.batch)
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rawproduce.RequestPartition{
			Partition: int32(s.tp.Partition), RecordSet: protocol.RawRecordSet{Reader: rs}})
	}
	m, err := p.transport().RoundTrip(ctx, p.client.Addr, req)
	if err != nil {
		for _, s := range sends {
			s.err = fmt.Errorf("kafkabatch: producing to %s/%d: %w", s.tp.Topic, s.tp.Partition, err)
		}
		return
	}
	res, ok := m.(*produceAPI.Response)
	if !ok {
		err = fmt.Errorf("a produce request answered %T", m)
	}
	for _, s := range sends {
		if err != nil {
			s.err = err
			continue
		}
		s.done, s.err = produceAnswer(res, s.tp)
	}
}

// produceAnswer reads tp's part of a produce response: written (an answer
// DUPLICATE_SEQUENCE_NUMBER too: the broker has the batch already), or
// the partition's error.
func produceAnswer(res *produceAPI.Response, tp TopicPartition) (bool, error) {
	err := PartitionAnswer(res, tp.Topic, tp.Partition)
	if err == nil || errors.Is(err, kafka.DuplicateSequenceNumber) {
		return true, nil
	}
	return false, fmt.Errorf("kafkabatch: producing to %s/%d: %w", tp.Topic, tp.Partition, err)
}

// produceTimeout is the acks timeout a produce request gives the broker,
// as kafka-go's Client computes it: half of what is left of the client's
// timeout or ctx's deadline, defaultProduceTimeout with neither.
func produceTimeout(ctx context.Context, client time.Duration) time.Duration {
	timeout := client
	if deadline, ok := ctx.Deadline(); ok {
		if remain := time.Until(deadline); remain < timeout {
			timeout = remain
		}
	}
	if timeout > 0 {
		return max(timeout/2, time.Millisecond)
	}
	return defaultProduceTimeout
}

// transport is the client's round tripper (kafka-go's default when unset).
func (p *TxnProducer) transport() interface {
	RoundTrip(context.Context, net.Addr, kafka.Request) (kafka.Response, error)
} {
	if p.client.Transport != nil {
		return p.client.Transport
	}
	return kafka.DefaultTransport
}
