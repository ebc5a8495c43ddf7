package kafkabatch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/segmentio/kafka-go/protocol/fetch"
)

// AbortedTxn is one entry of a read_committed fetch response's aborted
// transactions: the producer's transaction that began at FirstOffset was
// aborted (its abort marker comes later in the partition).
type AbortedTxn struct {
	ProducerID  int64
	FirstOffset int64
}

// Committed returns the data batches a read_committed consumer delivers out
// of batches (one partition's, in offset order, as fetched), given the
// aborted transactions the fetch response listed. Control batches are
// dropped. A transactional batch is dropped when its producer has an
// aborted transaction that began at or before the batch's last offset and
// whose abort marker has not come yet: Java's consumer (CompletedFetch)
// decides so. It does not change batches.
func Committed(batches []Batch, aborted []AbortedTxn) []Batch {
	pending := slices.Clone(aborted)
	slices.SortFunc(pending, func(a, b AbortedTxn) int { return cmp.Compare(a.FirstOffset, b.FirstOffset) })
	abortedProducers := map[int64]bool{}
	var out []Batch
	for _, b := range batches {
		if b.ProducerID != NoProducerID {
			last := b.BaseOffset + int64(b.LastOffsetDelta)
			for len(pending) > 0 && pending[0].FirstOffset <= last {
				abortedProducers[pending[0].ProducerID] = true
				pending = pending[1:]
			}
			if isAbortMarker(b) {
				delete(abortedProducers, b.ProducerID)
			} else if b.Transactional() && abortedProducers[b.ProducerID] {
				continue
			}
		}
		if !b.Control() {
			out = append(out, b)
		}
	}
	return out
}

func isAbortMarker(b Batch) bool {
	if !b.Control() || len(b.Records) == 0 {
		return false
	}
	m, err := ParseEndTxnMarker(b.Records[0])
	return err == nil && !m.Commit
}

// Fetched is what FetchCommitted read from one partition.
type Fetched struct {
	// Batches are the committed data batches (Committed), in offset order.
	Batches []Batch
	// Next is the offset to fetch from next: past every batch read,
	// aborted and control ones included.
	Next int64
	// LastStableOffset: a read_committed fetch returns nothing at or past
	// it (the first offset of a transaction still open).
	LastStableOffset int64
	HighWatermark    int64
}

// FetchCommitted reads one partition from offset with
// isolation.level=read_committed and drops what a Java read_committed
// consumer drops (Committed). kafka-go's own fetch asks the broker for
// read_committed but delivers aborted records as well: it reads the
// response's aborted transactions and throws them away.
//
// The batches are rebuilt from kafka-go's decoding of the response (it has
// no raw one): offsets, producer fields, attributes, keys, values and
// headers are the broker's (but kafka-go reads a null header value as
// empty); LastOffsetDelta is the last record's (the same but after
// compaction) and the timestamps count from the first record.
func FetchCommitted(ctx context.Context, c *kafka.Client, tp TopicPartition, offset int64, maxBytes int) (Fetched, error) {
	rt := c.Transport
	if rt == nil {
		rt = kafka.DefaultTransport
	}
	m, err := rt.RoundTrip(ctx, c.Addr, &fetch.Request{
		ReplicaID:      -1, // a consumer
		MinBytes:       1,  // answer at once (MaxWaitTime 0)
		MaxBytes:       int32(maxBytes),
		IsolationLevel: 1, // read_committed
		SessionID:      -1,
		SessionEpoch:   -1, // no fetch session
		Topics: []fetch.RequestTopic{{Topic: tp.Topic, Partitions: []fetch.RequestPartition{{
			Partition:          int32(tp.Partition),
			CurrentLeaderEpoch: -1,
			FetchOffset:        offset,
			LogStartOffset:     -1,
			PartitionMaxBytes:  int32(maxBytes),
		}}}},
	})
	if err != nil {
		return Fetched{}, fmt.Errorf("kafkabatch: fetching %s/%d from %d: %w", tp.Topic, tp.Partition, offset, err)
	}
	res := m.(*fetch.Response)
	if len(res.Topics) != 1 || len(res.Topics[0].Partitions) != 1 {
		return Fetched{}, fmt.Errorf("kafkabatch: fetching %s/%d from %d: the answer has no such partition", tp.Topic, tp.Partition, offset)
	}
	part := &res.Topics[0].Partitions[0]
	if part.ErrorCode != 0 {
		return Fetched{}, fmt.Errorf("kafkabatch: fetching %s/%d from %d: %w", tp.Topic, tp.Partition, offset, kafka.Error(part.ErrorCode))
	}
	batches, err := fromKafkaGo(part.RecordSet.Records)
	if err != nil {
		return Fetched{}, fmt.Errorf("kafkabatch: fetching %s/%d from %d: %w", tp.Topic, tp.Partition, offset, err)
	}
	f := Fetched{Next: offset, LastStableOffset: part.LastStableOffset, HighWatermark: part.HighWatermark}
	for _, b := range batches {
		f.Next = max(f.Next, b.BaseOffset+int64(b.LastOffsetDelta)+1)
	}
	aborted := make([]AbortedTxn, len(part.AbortedTransactions))
	for i, a := range part.AbortedTransactions {
		aborted[i] = AbortedTxn{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset}
	}
	f.Batches = Committed(batches, aborted)
	return f, nil
}

// fromKafkaGo rebuilds Batches from kafka-go's decoding of a fetch
// response's records: a *protocol.RecordStream of *protocol.RecordBatch and
// *protocol.ControlBatch, or one of them alone.
func fromKafkaGo(rr protocol.RecordReader) ([]Batch, error) {
	var readers []protocol.RecordReader
	switch r := rr.(type) {
	case nil:
		return nil, nil
	case *protocol.RecordStream:
		readers = r.Records
	default:
		readers = []protocol.RecordReader{r}
	}
	out := make([]Batch, 0, len(readers))
	for _, r := range readers {
		var b Batch
		switch r := r.(type) {
		case *protocol.RecordBatch:
			b = Batch{BaseOffset: r.BaseOffset, PartitionLeaderEpoch: r.PartitionLeaderEpoch, Attributes: int16(r.Attributes),
				ProducerID: r.ProducerID, ProducerEpoch: r.ProducerEpoch, BaseSequence: r.BaseSequence}
		case *protocol.ControlBatch:
			b = Batch{BaseOffset: r.BaseOffset, PartitionLeaderEpoch: r.PartitionLeaderEpoch, Attributes: int16(r.Attributes),
				ProducerID: r.ProducerID, ProducerEpoch: r.ProducerEpoch, BaseSequence: r.BaseSequence}
		default:
			return nil, fmt.Errorf("a record set of type %T, not a v2 batch (magic 2)", r)
		}
		if err := readRecords(&b, r); err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

func readRecords(b *Batch, rr protocol.RecordReader) error {
	for {
		r, err := rr.ReadRecord()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		rec := Record{OffsetDelta: int32(r.Offset - b.BaseOffset), Headers: nil}
		ts := r.Time.UnixMilli()
		if len(b.Records) == 0 {
			b.FirstTimestamp, b.MaxTimestamp = ts, ts
		}
		b.MaxTimestamp = max(b.MaxTimestamp, ts)
		rec.TimestampDelta = ts - b.FirstTimestamp
		if rec.Key, err = readBytes(r.Key); err != nil {
			return err
		}
		if rec.Value, err = readBytes(r.Value); err != nil {
			return err
		}
		for _, h := range r.Headers {
			rec.Headers = append(rec.Headers, Header(h))
		}
		b.LastOffsetDelta = rec.OffsetDelta
		b.Records = append(b.Records, rec)
	}
}

// readBytes reads a kafka-go key or value; nil stays null.
func readBytes(b protocol.Bytes) ([]byte, error) {
	if b == nil {
		return nil, nil
	}
	defer b.Close()
	v, err := protocol.ReadAll(b)
	if err == nil && v == nil {
		v = []byte{}
	}
	return v, err
}
