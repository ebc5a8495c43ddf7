package kafkabatch

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
)

// ProduceBatch sends one encoded batch (Encode) to a partition's leader
// with acks=all, through kafka-go's raw produce request, which sends the
// bytes as they are. transactionalID is "" outside a transaction. The
// error is the request's; the partition's answer (a kafka.Error such as
// OutOfOrderSequenceNumber) is in the response's Error.
func ProduceBatch(ctx context.Context, c *kafka.Client, topic string, partition int, transactionalID string, batch []byte) (*kafka.ProduceResponse, error) {
	// The records field is the batches prefixed by their total size, as
	// kafka-go's own RecordSet writes it.
	set := make([]byte, 4, 4+len(batch))
	binary.BigEndian.PutUint32(set, uint32(len(batch)))
	set = append(set, batch...)
	res, err := c.RawProduce(ctx, &kafka.RawProduceRequest{
		Topic:           topic,
		Partition:       partition,
		RequiredAcks:    kafka.RequireAll,
		TransactionalID: transactionalID,
		RawRecords:      protocol.RawRecordSet{Reader: bytes.NewReader(set)},
	})
	if err != nil {
		return nil, fmt.Errorf("kafkabatch: producing to %s/%d: %w", topic, partition, err)
	}
	return res, nil
}
