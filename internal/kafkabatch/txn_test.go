package kafkabatch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
)

// bedClient is a kafka-go Client on the bed's broker, with its own
// transport, and a fresh topic of the given partitions.
func bedClient(t *testing.T, partitions int) (*kafka.Client, string) {
	t.Helper()
	brokers := strings.Split(testbed.KafkaBrokers(t), ",")
	tr := &kafka.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	c := &kafka.Client{Addr: kafka.TCP(brokers...), Transport: tr, Timeout: 20 * time.Second}
	topic := fmt.Sprintf("kafkabatch-%s-%d", strings.ToLower(t.Name()), time.Now().UnixNano())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{
		{Topic: topic, NumPartitions: partitions, ReplicationFactor: 1},
	}})
	if err != nil {
		t.Fatalf("creating %s: %v", topic, err)
	}
	if err := res.Errors[topic]; err != nil {
		t.Fatalf("creating %s: %v", topic, err)
	}
	return c, topic
}

func newTxn(t *testing.T, c *kafka.Client, id string) *TxnProducer {
	t.Helper()
	p, err := NewTxnProducer(c, TxnProducerConfig{TransactionalID: id, TransactionTimeout: 30 * time.Second, RetryBackoff: 20 * time.Millisecond},
		slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func values(vs ...string) []Message {
	out := make([]Message, len(vs))
	for i, v := range vs {
		out[i] = Message{Key: []byte("k"), Value: []byte(v), Timestamp: time.Now().UnixMilli()}
	}
	return out
}

func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func produce(t *testing.T, ctx context.Context, p *TxnProducer, tp TopicPartition, wantOffset int64, vs ...string) {
	t.Helper()
	off, err := p.Produce(ctx, tp, values(vs...))
	must(t, fmt.Sprintf("producing %v to %s/%d", vs, tp.Topic, tp.Partition), err)
	if off != wantOffset {
		t.Errorf("%v went to offset %d of %s/%d, want %d", vs, off, tp.Topic, tp.Partition, wantOffset)
	}
}

// TestTxnCommitAbortReadCommitted, on the bed's broker: a committed
// transaction over two partitions, an aborted one, a committed one. Kafka's
// own console consumer reading read_committed sees the committed records
// only, and so does FetchCommitted; the aborted ones are in the log all
// the same (kafka-go, which does not filter aborted transactions, reads them).
func TestTxnCommitAbortReadCommitted(t *testing.T) {
	c, topic := bedClient(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	p := newTxn(t, c, topic)
	must(t, "Init", p.Init(ctx))
	p0, p1 := TopicPartition{topic, 0}, TopicPartition{topic, 1}

	must(t, "Begin", p.Begin())
	produce(t, ctx, p, p0, 0, "c1-0", "c1-1")
	produce(t, ctx, p, p1, 0, "c1-2")
	produce(t, ctx, p, p0, 2, "c1-3") // a second batch: sequence 2
	must(t, "Commit", p.Commit(ctx))

	must(t, "Begin", p.Begin())
	produce(t, ctx, p, p0, 4, "a-0") // offset 3 is the commit marker
	produce(t, ctx, p, p1, 2, "a-1", "a-2")
	must(t, "Abort", p.Abort(ctx))

	must(t, "Begin", p.Begin())
	produce(t, ctx, p, p0, 6, "c2-0")
	produce(t, ctx, p, p1, 5, "c2-1") // 4 is the abort marker
	must(t, "Commit", p.Commit(ctx))

	// Each partition's aborted records come before its last committed
	// one, so a reader that delivered them would show them.
	want := [2][]string{{"c1-0", "c1-1", "c1-3", "c2-0"}, {"c1-2", "c2-1"}}
	var committed [2][]string
	var wg sync.WaitGroup
	for part := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			committed[part] = javaReadCommitted(t, topic, part, len(want[part]))
		}()
	}
	wg.Wait()
	for part := range 2 {
		if !slices.Equal(committed[part], want[part]) {
			t.Errorf("partition %d, read_committed: %q, want %q", part, committed[part], want[part])
		}
	}
	for part := range 2 {
		if got := fetchCommitted(t, c, TopicPartition{topic, part}); !slices.Equal(got, committed[part]) {
			t.Errorf("partition %d: FetchCommitted read %q, Kafka's console consumer %q", part, got, committed[part])
		}
	}
	if got, want := readUncommitted(t, c, p0), []string{"c1-0", "c1-1", "c1-3", "a-0", "c2-0"}; !slices.Equal(got, want) {
		t.Errorf("partition 0, read_uncommitted: %q, want %q", got, want)
	}
	if got, want := readUncommitted(t, c, p1), []string{"c1-2", "a-1", "a-2", "c2-1"}; !slices.Equal(got, want) {
		t.Errorf("partition 1, read_uncommitted: %q, want %q", got, want)
	}
}

// TestTxnFencing: a second producer with the same transactional.id fences
// the first. The zombie's next produce and its commit fail with ErrFenced;
// what it wrote is aborted; the new producer's transaction commits.
func TestTxnFencing(t *testing.T) {
	c, topic := bedClient(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	tp := TopicPartition{topic, 0}

	a := newTxn(t, c, topic)
	must(t, "Init of the first", a.Init(ctx))
	must(t, "Begin", a.Begin())
	produce(t, ctx, a, tp, 0, "zombie-0")

	b := newTxn(t, c, topic)
	must(t, "Init of the second", b.Init(ctx)) // waits for the coordinator to abort a's transaction
	if b.ProducerID() != a.ProducerID() || b.Epoch() <= a.Epoch() {
		t.Fatalf("second producer: id %d epoch %d, first: id %d epoch %d; want the same id, a higher epoch", b.ProducerID(), b.Epoch(), a.ProducerID(), a.Epoch())
	}
	_, err := a.Produce(ctx, tp, values("zombie-1"))
	if !errors.Is(err, ErrFenced) {
		t.Fatalf("the zombie's produce: %v, want ErrFenced", err)
	}
	t.Logf("the zombie's produce: %v", err)
	if err := a.Commit(ctx); !errors.Is(err, ErrFenced) {
		t.Fatalf("the zombie's commit: %v, want ErrFenced", err)
	}

	// The second producer, fenced before its commit by a third.
	must(t, "Begin", b.Begin())
	produce(t, ctx, b, tp, 2, "b-0") // 1 is a's abort marker
	third := newTxn(t, c, topic)
	must(t, "Init of the third", third.Init(ctx))
	if err := b.Commit(ctx); !errors.Is(err, ErrFenced) {
		t.Fatalf("commit of the fenced second producer: %v, want ErrFenced", err)
	}
	must(t, "Begin", third.Begin())
	produce(t, ctx, third, tp, 4, "third-0", "third-1")
	must(t, "Commit", third.Commit(ctx))

	want := []string{"third-0", "third-1"} // after the aborted zombie-0 and b-0
	if got := javaReadCommitted(t, topic, 0, len(want)); !slices.Equal(got, want) {
		t.Errorf("read_committed: %q, want %q", got, want)
	}
	if got := fetchCommitted(t, c, tp); !slices.Equal(got, want) {
		t.Errorf("FetchCommitted: %q, want %q", got, want)
	}
	if got, want := readUncommitted(t, c, tp), []string{"zombie-0", "b-0", "third-0", "third-1"}; !slices.Equal(got, want) {
		t.Errorf("read_uncommitted: %q, want %q", got, want)
	}
}

// javaReadCommitted reads the first n values of a partition with Kafka's
// console consumer, isolation.level=read_committed.
func javaReadCommitted(t *testing.T, topic string, partition, n int) []string {
	cmd := exec.Command("java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-cp", javaClasspath(t), "org.apache.kafka.tools.consumer.ConsoleConsumer",
		"--bootstrap-server", testbed.KafkaBrokers(t), "--topic", topic,
		"--partition", fmt.Sprint(partition), "--offset", "earliest",
		"--isolation-level", "read_committed", "--max-messages", fmt.Sprint(n), "--timeout-ms", "30000",
		"--property", "print.offset=true")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil || !strings.Contains(stderr.String(), "Processed a total of") {
		t.Errorf("Kafka's console consumer on %s/%d: %v\n%s", topic, partition, err, stderr.String())
		return nil
	}
	// Records print as "Offset:N<tab>value"; its log lines go to stdout too.
	var out []string
	for _, line := range strings.Split(stdout.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, "Offset:"); ok {
			_, v, _ := strings.Cut(rest, "\t")
			out = append(out, v)
		}
	}
	return out
}

func javaClasspath(t *testing.T) string {
	cache := os.Getenv("OUTBOXRELAY_CACHE")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Fatal(err)
		}
		cache = filepath.Join(home, ".cache", "outboxrelay")
	}
	libs := filepath.Join(cache, "kafka-4.1.1", "libs")
	if _, err := os.Stat(filepath.Join(libs, ".complete")); err != nil {
		t.Fatalf("the bed's Kafka jars are not in %s (scripts/devenv up fetches them): %v", libs, err)
	}
	return filepath.Join(libs, "*")
}

// readUncommitted fetches a partition's data records with kafka-go, which
// skips control batches but keeps aborted records.
func readUncommitted(t *testing.T, c *kafka.Client, tp TopicPartition) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := c.Fetch(ctx, &kafka.FetchRequest{Topic: tp.Topic, Partition: tp.Partition, Offset: 0, MaxBytes: 1 << 20})
	if err != nil {
		t.Fatalf("fetching %s/%d: %v", tp.Topic, tp.Partition, err)
	}
	if res.Error != nil {
		t.Fatalf("fetching %s/%d: %v", tp.Topic, tp.Partition, res.Error)
	}
	var out []string
	for {
		r, err := res.Records.ReadRecord()
		if err != nil {
			break
		}
		v, _ := readAll(r.Value)
		out = append(out, string(v))
	}
	return out
}

func readAll(b kafka.Bytes) ([]byte, error) {
	if b == nil {
		return nil, nil
	}
	var buf bytes.Buffer
	_, err := buf.ReadFrom(b)
	return buf.Bytes(), err
}

// fetchCommitted reads a partition's values with FetchCommitted, to its
// end once no transaction is open there: the coordinator writes the
// markers after EndTxn answered, so the last stable offset may lag a moment.
func fetchCommitted(t *testing.T, c *kafka.Client, tp TopicPartition) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []string
	for offset := int64(0); ; {
		f, err := FetchCommitted(ctx, c, tp, offset, 1<<20)
		if err != nil {
			t.Fatalf("FetchCommitted: %v", err)
		}
		for _, b := range f.Batches {
			for _, r := range b.Records {
				out = append(out, string(r.Value))
			}
		}
		if f.Next >= f.HighWatermark && f.LastStableOffset == f.HighWatermark {
			return out
		}
		if f.Next == offset {
			time.Sleep(50 * time.Millisecond) // nothing stable past offset yet
		}
		offset = f.Next
	}
}

// TestTxnSequenceGapAbortsAndBumps: a batch whose sequence the broker does
// not expect (here: a gap made on purpose) fails as ErrAbortable; Abort
// then bumps the epoch, numbering starts again, and the next transaction
// commits. read_committed sees the committed records only.
func TestTxnSequenceGapAbortsAndBumps(t *testing.T) {
	c, topic := bedClient(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tp := TopicPartition{topic, 0}
	p := newTxn(t, c, topic)
	must(t, "Init", p.Init(ctx))
	must(t, "Begin", p.Begin())
	produce(t, ctx, p, tp, 0, "ok-0")
	p.sequences[tp] += 5 // as if five records had been lost
	_, err := p.Produce(ctx, tp, values("after-gap"))
	if !errors.Is(err, ErrAbortable) || !errors.Is(err, kafka.OutOfOrderSequenceNumber) {
		t.Fatalf("produce after a sequence gap: %v, want ErrAbortable and OUT_OF_ORDER_SEQUENCE_NUMBER", err)
	}
	epoch := p.Epoch()
	must(t, "Abort", p.Abort(ctx))
	if p.Epoch() <= epoch || p.sequences[tp] != 0 {
		t.Errorf("after the abort: epoch %d (was %d), next sequence %d; want a higher epoch and 0", p.Epoch(), epoch, p.sequences[tp])
	}
	must(t, "Begin", p.Begin())
	produce(t, ctx, p, tp, 2, "ok-1") // 1 is the abort marker
	must(t, "Commit", p.Commit(ctx))
	if got, want := fetchCommitted(t, c, tp), []string{"ok-1"}; !slices.Equal(got, want) {
		t.Errorf("read_committed: %q, want %q", got, want)
	}
}
