package verify

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/outboxrelay/outboxrelay/internal/kafkabatch"
	"github.com/outboxrelay/outboxrelay/internal/kafkaread"
)

// Regression (issue 27, item 3): a broker answering verify's
// read_committed fetch (exactly.once.support=required) with a record batch
// whose record count is -1 panicked kafka-go's decoder in kafka.Transport's
// goroutine (segmentio/kafka-go#1438): verify died with a stack trace.
// TopicsCommitted returns an error naming the partition and the issue.
func TestTopicsCommittedNegativeRecordCount(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	addr := c.ListenAddrs()[0]
	conn, err := kafka.DialLeader(context.Background(), "tcp", addr, "orders", 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.WriteMessages(kafka.Message{Value: []byte("a")})
	conn.Close()
	if err != nil {
		t.Fatal(err)
	}
	bad, err := kafkabatch.Encode(&kafkabatch.Batch{Records: []kafkabatch.Record{{Value: []byte("v")}}})
	if err != nil {
		t.Fatal(err)
	}
	binary.BigEndian.PutUint32(bad[57:], 0xffffffff) // the record count: -1
	binary.BigEndian.PutUint32(bad[17:], crc32.Checksum(bad[21:], crc32.MakeTable(crc32.Castagnoli)))
	c.ControlKey(int16(kmsg.Fetch), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kreq.(*kmsg.FetchRequest)
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		st := kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = req.Topics[0].Topic, req.Topics[0].TopicID
		sp := kmsg.NewFetchResponseTopicPartition()
		sp.HighWatermark, sp.LastStableOffset, sp.RecordBatches = 1, 1, bad
		st.Partitions = append(st.Partitions, sp)
		resp.Topics = append(resp.Topics, st)
		return resp, nil, true
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = TopicsCommitted(ctx, &kafka.Dialer{Timeout: 10 * time.Second}, addr, []string{"orders"}, "id")
	if !errors.Is(err, kafkaread.ErrDecoderPanic) {
		t.Fatalf("TopicsCommitted on a record count of -1: %v; want kafkaread.ErrDecoderPanic", err)
	}
	t.Logf("verify's error: %v", err)
	for _, want := range []string{"orders/0", "segmentio/kafka-go#1438"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}
