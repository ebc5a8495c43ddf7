package kafkabatch

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
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
