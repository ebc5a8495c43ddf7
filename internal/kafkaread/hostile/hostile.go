// Package hostile makes a fake Kafka cluster (franz-go's kfake) answer as
// a hostile broker would, for the tests that pin the kafka-go decoder guard
// (segmentio/kafka-go#1438): fetch answers carrying a record batch whose
// record count is negative. Tests only.
package hostile

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/outboxrelay/outboxrelay/internal/kafkabatch"
)

// NegativeCountBatch is a valid record batch of one record whose record
// count says -1, its CRC made right: segmentio/kafka-go#1438's input.
func NegativeCountBatch() ([]byte, error) {
	enc, err := kafkabatch.Encode(&kafkabatch.Batch{Records: []kafkabatch.Record{{Value: []byte("v")}}})
	if err != nil {
		return nil, fmt.Errorf("hostile: encoding a batch: %w", err)
	}
	binary.BigEndian.PutUint32(enc[57:], 0xffffffff) // the record count
	binary.BigEndian.PutUint32(enc[17:], crc32.Checksum(enc[21:], crc32.MakeTable(crc32.Castagnoli)))
	return enc, nil
}

// Fetches makes c answer every fetch with records, one batch for each
// partition asked for, high watermark and last stable offset 1.
func Fetches(c *kfake.Cluster, records []byte) {
	c.ControlKey(int16(kmsg.Fetch), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kreq.(*kmsg.FetchRequest)
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewFetchResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewFetchResponseTopicPartition()
				sp.Partition, sp.HighWatermark, sp.LastStableOffset = rp.Partition, 1, 1
				sp.RecordBatches = records
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
}
