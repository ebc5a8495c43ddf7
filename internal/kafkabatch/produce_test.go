package kafkabatch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	produceAPI "github.com/segmentio/kafka-go/protocol/produce"
)

// TestRecordSetReads: the produce request's records field is the batch
// prefixed by its 4-byte size, whatever sizes the reads ask for, and Reset
// starts it over.
func TestRecordSetReads(t *testing.T) {
	for _, n := range []int{0, 1, 3, 4, 5, 100, 70000} {
		batch := bytes.Repeat([]byte{0xab}, n)
		want := binary.BigEndian.AppendUint32(nil, uint32(n))
		want = append(want, batch...)
		var rs RecordSet
		for _, read := range []func(io.Reader) io.Reader{
			func(r io.Reader) io.Reader { return r },
			iotest.OneByteReader,
			iotest.HalfReader,
		} {
			rs.Reset(batch)
			got, err := io.ReadAll(read(&rs))
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("batch of %d: read %d bytes (%v), want %d", n, len(got), err, len(want))
			}
		}
		rs.Reset(nil)
		if rs.batch != nil {
			t.Fatalf("Reset(nil) kept the batch")
		}
	}
}

// TestPartitionErrorText: a refused partition's error keeps its code for
// errors.Is and carries the broker's message and, with Produce v8, the
// first refused record of the batch and how many more there are.
func TestPartitionErrorText(t *testing.T) {
	for _, tc := range []struct {
		part produceAPI.ResponsePartition
		want string
	}{
		{produceAPI.ResponsePartition{ErrorCode: int16(kafka.InvalidRecord)}, kafka.InvalidRecord.Error()},
		{produceAPI.ResponsePartition{ErrorCode: int16(kafka.InvalidRecord), ErrorMessage: "bad batch"}, kafka.InvalidRecord.Error() + ": bad batch"},
		{produceAPI.ResponsePartition{ErrorCode: int16(kafka.InvalidRecord), RecordErrors: []produceAPI.ResponseError{{BatchIndex: 3, BatchIndexErrorMessage: "null key on a compacted topic"}}},
			kafka.InvalidRecord.Error() + ": record 3 of the batch: null key on a compacted topic"},
		{produceAPI.ResponsePartition{ErrorCode: int16(kafka.InvalidRecord), ErrorMessage: "bad batch", RecordErrors: []produceAPI.ResponseError{{BatchIndex: 0, BatchIndexErrorMessage: "x"}, {BatchIndex: 2}}},
			kafka.InvalidRecord.Error() + ": bad batch; record 0 of the batch: x (and 1 more records)"},
	} {
		err := partitionError(tc.part)
		if !errors.Is(err, kafka.InvalidRecord) || err.Error() != tc.want {
			t.Errorf("partitionError = %q, want %q", err, tc.want)
		}
	}
}

// TestPartitionAnswer: the partition asked for is found among the
// response's topics and partitions; DUPLICATE_SEQUENCE_NUMBER comes back
// as itself (its caller decides it is success), and a partition the
// response leaves out is an error naming it.
func TestPartitionAnswer(t *testing.T) {
	res := &produceAPI.Response{Topics: []produceAPI.ResponseTopic{
		{Topic: "orders", Partitions: []produceAPI.ResponsePartition{{Partition: 0}, {Partition: 1, ErrorCode: int16(kafka.DuplicateSequenceNumber)}}},
		{Topic: "payments", Partitions: []produceAPI.ResponsePartition{{Partition: 0, ErrorCode: int16(kafka.NotLeaderForPartition)}}},
	}}
	if err := PartitionAnswer(res, "orders", 0); err != nil {
		t.Errorf("orders/0: %v, want nil", err)
	}
	if err := PartitionAnswer(res, "orders", 1); !errors.Is(err, kafka.DuplicateSequenceNumber) {
		t.Errorf("orders/1: %v, want DUPLICATE_SEQUENCE_NUMBER", err)
	}
	if err := PartitionAnswer(res, "payments", 0); !errors.Is(err, kafka.NotLeaderForPartition) {
		t.Errorf("payments/0: %v, want NOT_LEADER_OR_FOLLOWER", err)
	}
	var missing protocol.Error
	if err := PartitionAnswer(res, "payments", 3); err == nil || !errors.As(err, &missing) || !strings.Contains(err.Error(), "payments") || !strings.Contains(err.Error(), "3") {
		t.Errorf("payments/3: %v, want the partition named missing", err)
	}
}

// TestProduceAnswerDuplicateIsWritten: in a transaction, a batch answered
// DUPLICATE_SEQUENCE_NUMBER is written (an earlier attempt whose answer
// was lost wrote it), and any other refusal names the partition.
func TestProduceAnswerDuplicateIsWritten(t *testing.T) {
	res := &produceAPI.Response{Topics: []produceAPI.ResponseTopic{{Topic: "orders", Partitions: []produceAPI.ResponsePartition{
		{Partition: 0, ErrorCode: int16(kafka.DuplicateSequenceNumber)},
		{Partition: 1, ErrorCode: int16(kafka.OutOfOrderSequenceNumber)},
	}}}}
	if done, err := produceAnswer(res, TopicPartition{Topic: "orders", Partition: 0}); !done || err != nil {
		t.Errorf("orders/0: done %v, err %v; want written", done, err)
	}
	done, err := produceAnswer(res, TopicPartition{Topic: "orders", Partition: 1})
	if done || !errors.Is(err, kafka.OutOfOrderSequenceNumber) || !strings.Contains(err.Error(), "orders/1") {
		t.Errorf("orders/1: done %v, err %v; want OUT_OF_ORDER_SEQUENCE_NUMBER naming orders/1", done, err)
	}
}
