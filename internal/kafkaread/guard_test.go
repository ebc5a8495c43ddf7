package kafkaread

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/outboxrelay/outboxrelay/internal/kafkabatch"
	"github.com/outboxrelay/outboxrelay/internal/kafkaread/hostile"
)

// panickingConn stands in for a connection whose fetch answer kafka-go's
// decoder panics on, as segmentio/kafka-go#1438's record count of -1 makes
// it: a runtime error from make with a negative length.
type panickingConn struct{ count int }

func (panickingConn) Seek(offset int64, _ int) (int64, error) { return offset, nil }
func (panickingConn) SetReadDeadline(time.Time) error         { return nil }
func (c panickingConn) ReadBatch(int, int) messageBatch       { return panickingBatch(c) }

type panickingBatch struct{ count int }

func (b panickingBatch) ReadMessage() (kafka.Message, error) {
	_ = make([]kafka.Message, b.count) // panics: makeslice: len out of range
	return kafka.Message{}, nil
}
func (panickingBatch) Close() error { return nil }

// Regression (issue 27, item 3): a panic of kafka-go's decoder while
// reading a partition (verify reads through readBatch) ended the process.
// It is an error naming the partition, the offset and the upstream issue.
func TestReadBatchRecoversDecoderPanic(t *testing.T) {
	_, err := readBatch(panickingConn{count: -1}, "orders", 2, 5, 10)
	if !errors.Is(err, ErrDecoderPanic) {
		t.Fatalf("readBatch on a panicking decoder: %v; want ErrDecoderPanic", err)
	}
	for _, want := range []string{"reading orders/2 at offset 5", "segmentio/kafka-go#1438", "makeslice"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// negativeCountBatch is hostile.NegativeCountBatch.
func negativeCountBatch(t *testing.T) []byte {
	t.Helper()
	b, err := hostile.NegativeCountBatch()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Regression (issue 27, item 3): a fetch answer with a record count of -1
// (segmentio/kafka-go#1438) panicked kafka-go's decoder inside
// kafka.Transport's own goroutine, which no caller can recover: verify's
// read_committed read (kafkabatch.FetchCommitted) ended the process.
// Through FetchTransport it returns ErrDecoderPanic naming the partition.
func TestFetchTransportNegativeRecordCount(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	hostile.Fetches(c, negativeCountBatch(t))
	addr := c.ListenAddrs()[0]
	client := &kafka.Client{Addr: kafka.TCP(addr), Transport: &FetchTransport{Brokers: []string{addr}}}
	_, err = kafkabatch.FetchCommitted(context.Background(), client, kafkabatch.TopicPartition{Topic: "t"}, 0, 1<<20)
	if !errors.Is(err, ErrDecoderPanic) || !strings.Contains(err.Error(), "t/0 at offset 0") {
		t.Fatalf("FetchCommitted of a record count of -1: %v; want ErrDecoderPanic naming t/0", err)
	}
}

// TestFetchTransportSASL: FetchTransport reads what a read_committed
// consumer reads from a broker that wants SASL, with the dialer's
// mechanism, and fails without it.
func TestFetchTransportSASL(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.Superuser("PLAIN", "relay", "pw"), kfake.SeedTopics(1, "t"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	mech := plain.Mechanism{Username: "relay", Password: "pw"}
	addr := c.ListenAddrs()[0]
	dialer := &kafka.Dialer{Timeout: 10 * time.Second, SASLMechanism: mech}
	conn, err := dialer.DialLeader(context.Background(), "tcp", addr, "t", 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.WriteMessages(kafka.Message{Value: []byte("a")}, kafka.Message{Value: []byte("b")})
	conn.Close()
	if err != nil {
		t.Fatal(err)
	}
	client := &kafka.Client{Addr: kafka.TCP(addr), Transport: &FetchTransport{Brokers: []string{addr}, Dialer: dialer}}
	f, err := kafkabatch.FetchCommitted(context.Background(), client, kafkabatch.TopicPartition{Topic: "t"}, 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range f.Batches {
		for _, r := range b.Records {
			got = append(got, string(r.Value))
		}
	}
	if strings.Join(got, ",") != "a,b" || f.Next != 2 {
		t.Errorf("read %q, next %d; want a,b and 2", got, f.Next)
	}
	bad := &kafka.Client{Addr: kafka.TCP(addr), Transport: &FetchTransport{Brokers: []string{addr}, Dialer: &kafka.Dialer{Timeout: 10 * time.Second}}}
	if _, err := kafkabatch.FetchCommitted(context.Background(), bad, kafkabatch.TopicPartition{Topic: "t"}, 0, 1<<20); err == nil {
		t.Error("FetchCommitted without SASL from a broker that wants it: no error")
	}
}
