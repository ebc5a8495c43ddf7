package kafkabatch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol/addpartitionstotxn"
	"github.com/segmentio/kafka-go/protocol/initproducerid"
	metadataAPI "github.com/segmentio/kafka-go/protocol/metadata"
	produceAPI "github.com/segmentio/kafka-go/protocol/produce"
	"github.com/segmentio/kafka-go/protocol/rawproduce"
)

// fakeBroker is a kafka.RoundTripper that answers what ProduceAll sends:
// InitProducerId, the cached metadata (leader per partition),
// AddPartitionsToTxn and produce requests; refuse answers a partition's
// next produces with an error code, once per entry.
type fakeBroker struct {
	mu       sync.Mutex
	leaders  map[TopicPartition]int32
	refuse   map[TopicPartition][]int16
	requests [][]TopicPartition // the partitions of each produce request
	written  map[TopicPartition]int
}

func (f *fakeBroker) RoundTrip(ctx context.Context, _ net.Addr, req kafka.Request) (kafka.Response, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r := req.(type) {
	case *initproducerid.Request:
		return &initproducerid.Response{ProducerID: 7, ProducerEpoch: 1}, nil
	case *metadataAPI.Request:
		res := &metadataAPI.Response{}
		for _, name := range r.TopicNames {
			t := metadataAPI.ResponseTopic{Name: name}
			for tp, l := range f.leaders {
				if tp.Topic == name {
					t.Partitions = append(t.Partitions, metadataAPI.ResponsePartition{PartitionIndex: int32(tp.Partition), LeaderID: l})
				}
			}
			res.Topics = append(res.Topics, t)
		}
		return res, nil
	case *addpartitionstotxn.Request:
		res := &addpartitionstotxn.Response{}
		for _, t := range r.Topics {
			rr := addpartitionstotxn.ResponseResult{Name: t.Name}
			for _, p := range t.Partitions {
				rr.Results = append(rr.Results, addpartitionstotxn.ResponsePartition{PartitionIndex: p})
			}
			res.Results = append(res.Results, rr)
		}
		return res, nil
	case *rawproduce.Request:
		return f.produce(r)
	}
	return nil, fmt.Errorf("fakeBroker: unexpected %T", req)
}

func (f *fakeBroker) produce(r *rawproduce.Request) (kafka.Response, error) {
	var tps []TopicPartition
	res := &produceAPI.Response{}
	var leader int32 = -1
	for _, t := range r.Topics {
		rt := produceAPI.ResponseTopic{Topic: t.Topic}
		for _, p := range t.Partitions {
			tp := TopicPartition{Topic: t.Topic, Partition: int(p.Partition)}
			if l := f.leaders[tp]; leader >= 0 && l != leader {
				return nil, fmt.Errorf("mismatching leaders (%d!=%d)", l, leader)
			} else {
				leader = l
			}
			tps = append(tps, tp)
			part := produceAPI.ResponsePartition{Partition: p.Partition}
			if codes := f.refuse[tp]; len(codes) > 0 {
				part.ErrorCode, f.refuse[tp] = codes[0], codes[1:]
			} else {
				f.written[tp]++
			}
			rt.Partitions = append(rt.Partitions, part)
		}
		res.Topics = append(res.Topics, rt)
	}
	f.requests = append(f.requests, tps)
	return res, nil
}

func newFakeBrokerProducer(t *testing.T, f *fakeBroker) *TxnProducer {
	t.Helper()
	f.written = map[TopicPartition]int{}
	client := &kafka.Client{Addr: kafka.TCP("fake:9092"), Transport: f}
	p, err := NewTxnProducer(client, TxnProducerConfig{TransactionalID: "t", RetryBackoff: 1, RetryBackoffMax: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := p.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Begin(); err != nil {
		t.Fatal(err)
	}
	return p
}

func oneRecord(tp TopicPartition) PartitionBatch {
	return PartitionBatch{TP: tp, Msgs: []Message{{Value: []byte("v")}}}
}

// ProduceAll puts the partitions one broker leads in one produce request,
// and a partition refused with a transient error is sent again alone:
// the partitions the broker wrote are not sent twice, and the sequences
// of all advance once.
func TestProduceAllOneRequestPerLeaderRetriesRefusedPartition(t *testing.T) {
	a0, a1 := TopicPartition{"a", 0}, TopicPartition{"a", 1}
	b0, off := TopicPartition{"b", 0}, TopicPartition{"offsets", 0}
	f := &fakeBroker{
		leaders: map[TopicPartition]int32{a0: 1, a1: 2, b0: 1, off: 1},
		refuse:  map[TopicPartition][]int16{b0: {int16(kafka.NotLeaderForPartition)}},
	}
	p := newFakeBrokerProducer(t, f)
	if err := p.ProduceAll(context.Background(), []PartitionBatch{oneRecord(a0), oneRecord(a1), oneRecord(b0), oneRecord(off)}); err != nil {
		t.Fatal(err)
	}
	perLeader := map[int32]int{}
	for _, req := range f.requests[:2] {
		perLeader[f.leaders[req[0]]] = len(req)
	}
	if len(f.requests) != 3 || perLeader[1] != 3 || perLeader[2] != 1 {
		t.Fatalf("produce requests %v; want one with broker 1's three partitions, one with broker 2's, then b/0 again alone", f.requests)
	}
	if again := f.requests[2]; len(again) != 1 || again[0] != b0 {
		t.Fatalf("the retry sent %v, want b/0 alone", again)
	}
	for _, tp := range []TopicPartition{a0, a1, b0, off} {
		if f.written[tp] != 1 {
			t.Errorf("%v written %d times, want once", tp, f.written[tp])
		}
		if p.sequences[tp] != 1 {
			t.Errorf("%v next sequence %d, want 1", tp, p.sequences[tp])
		}
	}
}

// A partition refused for good (MESSAGE_TOO_LARGE) fails ProduceAll as
// abortable, naming that partition, and the epoch is to be bumped.
func TestProduceAllPartitionRefusedAbortable(t *testing.T) {
	a0, b0 := TopicPartition{"a", 0}, TopicPartition{"b", 0}
	f := &fakeBroker{
		leaders: map[TopicPartition]int32{a0: 1, b0: 1},
		refuse:  map[TopicPartition][]int16{b0: {int16(kafka.MessageSizeTooLarge)}},
	}
	p := newFakeBrokerProducer(t, f)
	err := p.ProduceAll(context.Background(), []PartitionBatch{oneRecord(a0), oneRecord(b0)})
	if !errors.Is(err, ErrAbortable) || !errors.Is(err, kafka.MessageSizeTooLarge) {
		t.Fatalf("ProduceAll: %v, want ErrAbortable wrapping MESSAGE_TOO_LARGE", err)
	}
	if p.state != stateAbortable || !p.bump {
		t.Fatalf("state %d bump %v, want abortable and an epoch bump after the abort", p.state, p.bump)
	}
	if len(f.requests) != 1 {
		t.Fatalf("%d produce requests, want 1 (no retry of a permanent refusal)", len(f.requests))
	}
}

// Batches of one leader over max.request.size together go in more than
// one request; two batches of one partition are refused before anything
// is sent.
func TestGroupSendsBySizeAndDuplicates(t *testing.T) {
	sends := []*txnSend{
		{tp: TopicPartition{"a", 0}, batch: make([]byte, 600)},
		{tp: TopicPartition{"a", 1}, batch: make([]byte, 600)},
		{tp: TopicPartition{"a", 2}, batch: make([]byte, 300)},
		{tp: TopicPartition{"new", 0}, batch: make([]byte, 10)}, // not in the metadata yet
	}
	leaders := map[TopicPartition]int32{{"a", 0}: 1, {"a", 1}: 1, {"a", 2}: 1}
	reqs := groupSends(sends, leaders, 1000)
	var sizes []int
	for _, r := range reqs {
		sizes = append(sizes, len(r))
	}
	if fmt.Sprint(sizes) != "[1 2 1]" {
		t.Fatalf("requests of %v partitions, want [1 2 1] (a/0; a/1 and a/2; new/0 alone)", sizes)
	}
	f := &fakeBroker{leaders: leaders}
	p := newFakeBrokerProducer(t, f)
	tp := TopicPartition{"a", 0}
	if err := p.ProduceAll(context.Background(), []PartitionBatch{oneRecord(tp), oneRecord(tp)}); err == nil || len(f.requests) != 0 {
		t.Fatalf("two batches of a/0: %v after %d requests, want an error and none sent", err, len(f.requests))
	}
}
