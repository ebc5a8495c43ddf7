package sink

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestRecordSetReads: the produce request's records field is the batch
// prefixed by its 4-byte size, whatever sizes the reads ask for, and reset
// starts it over.
func TestRecordSetReads(t *testing.T) {
	for _, n := range []int{0, 1, 3, 4, 5, 100, 70000} {
		batch := bytes.Repeat([]byte{0xab}, n)
		want := binary.BigEndian.AppendUint32(nil, uint32(n))
		want = append(want, batch...)
		var rs recordSet
		for _, read := range []func(io.Reader) io.Reader{
			func(r io.Reader) io.Reader { return r },
			iotest.OneByteReader,
			iotest.HalfReader,
		} {
			rs.reset(batch)
			got, err := io.ReadAll(read(&rs))
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("batch of %d: read %d bytes (%v), want %d", n, len(got), err, len(want))
			}
		}
		rs.reset(nil)
		if rs.batch != nil {
			t.Fatalf("reset(nil) kept the batch")
		}
	}
}

// Regression (review of issue 14c, finding 1; wire.go): a partition's own
// connection stayed with a broker that no longer led the partition as long
// as that broker answered an error other than NOT_LEADER_OR_FOLLOWER, here
// KAFKA_STORAGE_ERROR as a deposed leader with an offline log dir answers:
// the partition was stuck for good (421 refusals in 20 s). Any refused
// answer now drops the connection, and the retry dials the leader named by
// metadata fetched afresh.
func TestDeposedLeaderStorageErrorRedialed(t *testing.T) {
	c, addr := newCluster(t, kfake.NumBrokers(3), kfake.SeedTopics(1, "orders"))
	p := newTestProducer(t, fastConfig(addr))
	a := newAcks()
	var ids []string
	send := func(from, to int) {
		for i := from; i < to; i++ {
			id := fmt.Sprintf("e%d", i)
			if err := p.Send(context.Background(), Record{Topic: "orders", Partition: 0, Key: []byte("k"), Value: []byte(fmt.Sprintf("seq=%d", i)), EventID: id}, a.cb(id)); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		flush(t, p, 20*time.Second)
	}
	send(0, 5)
	old := c.LeaderFor("orders", 0)
	var refused atomic.Int32
	c.ControlKey(int16(kmsg.Produce), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if c.CurrentNode() != old {
			return nil, nil, false
		}
		req := kreq.(*kmsg.ProduceRequest)
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewProduceResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewProduceResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, int16(kafka.KafkaStorageError)
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		refused.Add(1)
		return resp, nil, true
	})
	if err := c.MoveTopicPartition("orders", 0, (old+1)%3); err != nil {
		t.Fatal(err)
	}
	send(5, 10)
	if refused.Load() == 0 {
		t.Fatal("the old leader refused nothing: the test did not reach its case")
	}
	a.exactlyOnce(t, ids)
	for _, id := range ids {
		if err := a.err(id); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	got := readTopic(t, []string{addr}, "orders")
	if len(got[0]) != len(ids) {
		t.Fatalf("%d records in the partition, want %d", len(got[0]), len(ids))
	}
	for i, m := range got[0] {
		if want := fmt.Sprintf("seq=%d", i); string(m.Value) != want {
			t.Fatalf("record %d is %s, want %s", i, m.Value, want)
		}
	}
}
