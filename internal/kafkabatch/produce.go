package kafkabatch

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"strings"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	produceAPI "github.com/segmentio/kafka-go/protocol/produce"
)

// ProduceBatch sends one encoded batch (Encode) to a partition's leader
// with acks=all, through kafka-go's raw produce request, which sends the
// bytes as they are. transactionalID is "" outside a transaction. The
// error is the request's; the partition's answer (a kafka.Error such as
// OutOfOrderSequenceNumber) is in the response's Error.
func ProduceBatch(ctx context.Context, c *kafka.Client, topic string, partition int, transactionalID string, batch []byte) (*kafka.ProduceResponse, error) {
	rs := new(RecordSet)
	rs.Reset(batch)
	res, err := c.RawProduce(ctx, &kafka.RawProduceRequest{
		Topic:           topic,
		Partition:       partition,
		RequiredAcks:    kafka.RequireAll,
		TransactionalID: transactionalID,
		RawRecords:      protocol.RawRecordSet{Reader: rs},
	})
	if err != nil {
		return nil, fmt.Errorf("kafkabatch: producing to %s/%d: %w", topic, partition, err)
	}
	return res, nil
}

// RecordSet reads as a produce request's records field, as kafka-go's
// RecordSet writes it: one batch prefixed by its size, read from the
// batch itself, not from a copy of it. The zero value is empty; Reset
// starts it over on a batch, and Reset(nil) drops its reference.
type RecordSet struct {
	size  [4]byte
	sent  int // bytes of size read
	batch []byte
}

// Reset makes r read batch from its start.
func (r *RecordSet) Reset(batch []byte) {
	binary.BigEndian.PutUint32(r.size[:], uint32(len(batch)))
	r.sent, r.batch = 0, batch
}

func (r *RecordSet) Read(b []byte) (int, error) {
	if r.sent < len(r.size) {
		n := copy(b, r.size[r.sent:])
		r.sent += n
		return n, nil
	}
	if len(r.batch) == 0 {
		return 0, io.EOF
	}
	n := copy(b, r.batch)
	r.batch = r.batch[n:]
	return n, nil
}

// PartitionAnswer reads one partition's part of a produce response: nil
// when it was written, else its error as a kafka.Error with the broker's
// message (DUPLICATE_SEQUENCE_NUMBER too: whether that is success is the
// caller's to say). A response without the partition is an error.
func PartitionAnswer(res *produceAPI.Response, topic string, partition int) error {
	for _, t := range res.Topics {
		if t.Topic != topic {
			continue
		}
		for _, part := range t.Partitions {
			if int(part.Partition) != partition {
				continue
			}
			if part.ErrorCode == 0 {
				return nil
			}
			return partitionError(part)
		}
	}
	return fmt.Errorf("the produce response does not answer for the partition: %w", protocol.NewErrNoPartition(topic, int32(partition)))
}

// BaseOffset is the offset the broker wrote a batch to partition at, as
// its produce answer says; -1 when the answer names no such partition.
func BaseOffset(res *produceAPI.Response, topic string, partition int) int64 {
	for _, t := range res.Topics {
		if t.Topic != topic {
			continue
		}
		for _, part := range t.Partitions {
			if int(part.Partition) == partition {
				return part.BaseOffset
			}
		}
	}
	return -1
}

// partitionError is a refused partition's answer as a kafka.Error, with
// the broker's message and (Produce v8) the records it names.
func partitionError(part produceAPI.ResponsePartition) error {
	msg := part.ErrorMessage
	if n := len(part.RecordErrors); n > 0 {
		re := part.RecordErrors[0]
		more := ""
		if n > 1 {
			more = fmt.Sprintf(" (and %d more records)", n-1)
		}
		msg = strings.TrimPrefix(fmt.Sprintf("%s; record %d of the batch: %s%s", msg, re.BatchIndex, re.BatchIndexErrorMessage, more), "; ")
	}
	if msg == "" {
		return kafka.Error(part.ErrorCode)
	}
	return fmt.Errorf("%w: %s", kafka.Error(part.ErrorCode), msg)
}
