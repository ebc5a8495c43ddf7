package kafkaread

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
)

// cluster starts an in-process broker with topic "t" of three partitions
// and writes n records to each, valued "p<partition>-<i>".
func cluster(t *testing.T, n int) Reader {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "t"))
	if err != nil {
		t.Fatalf("starting kfake: %v", err)
	}
	t.Cleanup(c.Close)
	r := Reader{Broker: c.ListenAddrs()[0]}
	write(t, r, 0, n)
	return r
}

// write appends records from..to-1 to each partition of "t".
func write(t *testing.T, r Reader, from, to int) {
	t.Helper()
	if err := produce(r, from, to); err != nil {
		t.Fatal(err)
	}
}

func produce(r Reader, from, to int) error {
	for p := range 3 {
		conn, err := kafka.DialLeader(context.Background(), "tcp", r.Broker, "t", p)
		if err != nil {
			return err
		}
		var msgs []kafka.Message
		for i := from; i < to; i++ {
			msgs = append(msgs, kafka.Message{Value: fmt.Appendf(nil, "p%d-%d", p, i)})
		}
		_, err = conn.WriteMessages(msgs...)
		conn.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// values groups the values by partition, checking each partition's
// offsets increase.
func values(t *testing.T, msgs []kafka.Message) map[int][]string {
	t.Helper()
	out := map[int][]string{}
	last := map[int]int64{}
	for _, m := range msgs {
		if prev, ok := last[m.Partition]; ok && m.Offset <= prev {
			t.Errorf("partition %d: offset %d after %d", m.Partition, m.Offset, prev)
		}
		last[m.Partition] = m.Offset
		out[m.Partition] = append(out[m.Partition], string(m.Value))
	}
	return out
}

func TestTopicAndPartition(t *testing.T) {
	ctx := context.Background()
	r := cluster(t, 5)
	msgs, err := r.Topic(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	got := values(t, msgs)
	for p := range 3 {
		if len(got[p]) != 5 || got[p][0] != fmt.Sprintf("p%d-0", p) || got[p][4] != fmt.Sprintf("p%d-4", p) {
			t.Errorf("partition %d: %q", p, got[p])
		}
	}
	ends, err := r.EndOffsets(ctx, "t")
	if err != nil || len(ends) != 3 || ends[0] != 5 || ends[2] != 5 {
		t.Fatalf("EndOffsets = %v, %v; want 5 for each of 3 partitions", ends, err)
	}
	write(t, r, 5, 8)
	after, err := r.Partition(ctx, "t", 1, ends[1])
	if err != nil || len(after) != 3 || string(after[0].Value) != "p1-5" || after[0].Offset != 5 {
		t.Fatalf("Partition from the old end = %v, %v; want the 3 records written since", values(t, after), err)
	}
	if none, err := r.Partition(ctx, "t", 1, 8); err != nil || none != nil {
		t.Fatalf("Partition from its end = %v, %v; want nil", none, err)
	}
}

func TestMissingTopic(t *testing.T) {
	ctx := context.Background()
	r := cluster(t, 0)
	if msgs, err := r.Topic(ctx, "nope"); err != nil || msgs != nil {
		t.Errorf("Topic of a missing topic = %v, %v; want nil, nil", msgs, err)
	}
	if ends, err := r.EndOffsets(ctx, "nope"); err != nil || ends != nil {
		t.Errorf("EndOffsets of a missing topic = %v, %v; want nil, nil", ends, err)
	}
	if _, err := r.Partitions(ctx, "nope"); !errors.Is(err, kafka.UnknownTopicOrPartition) {
		t.Errorf("Partitions of a missing topic: %v; want UnknownTopicOrPartition", err)
	}
	_, err := r.Wait(ctx, "nope", nil, 1, 200*time.Millisecond, 0)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait for a missing topic: %v; want a deadline error", err)
	}
}

func TestWait(t *testing.T) {
	ctx := context.Background()
	r := cluster(t, 2)
	ends, err := r.EndOffsets(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	produced := make(chan error, 1)
	go func() {
		time.Sleep(100 * time.Millisecond)
		produced <- produce(r, 2, 4)
	}()
	msgs, err := r.Wait(ctx, "t", ends, 6, 10*time.Second, 100*time.Millisecond)
	if perr := <-produced; perr != nil {
		t.Fatal(perr)
	}
	if err != nil {
		t.Fatal(err)
	}
	got := values(t, msgs)
	for p := range 3 {
		if len(got[p]) != 2 || got[p][0] != fmt.Sprintf("p%d-2", p) {
			t.Errorf("partition %d: %q; want the two records written after the end offsets", p, got[p])
		}
	}
	// From the start: everything, and a timeout names the shortfall.
	msgs, err = r.Wait(ctx, "t", nil, 13, 300*time.Millisecond, 0)
	if len(msgs) != 12 || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait for 13 of 12: %d records, %v; want 12 and a deadline error", len(msgs), err)
	}
}
