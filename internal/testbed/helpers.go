package testbed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/segmentio/kafka-go"

	"github.com/outboxrelay/outboxrelay/replication"
)

// Admin opens a superuser connection to the bed's order_db, closed at the
// end of the test.
func Admin(t testing.TB) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, Postgres(t))
	if err != nil {
		t.Fatalf("connecting to the bed's PostgreSQL as superuser: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// PostgresHostPort returns the host and port of the bed's PostgreSQL.
func PostgresHostPort(t testing.TB) (string, int) {
	t.Helper()
	u, err := url.Parse(Postgres(t))
	if err != nil {
		t.Fatalf("parsing %s: %v", EnvPostgresURL, err)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatalf("%s has no numeric port: %v", EnvPostgresURL, err)
	}
	return u.Hostname(), port
}

// Exec runs statements as the superuser, failing the test on error.
func Exec(t testing.TB, conn *pgx.Conn, sql ...string) {
	t.Helper()
	for _, s := range sql {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		_, err := conn.Exec(ctx, s)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// DropSlot removes a replication slot, and the marker of its unfinished
// initial snapshot, if they exist and are not in use.
func DropSlot(t testing.TB, conn *pgx.Conn, slot string) {
	t.Helper()
	Exec(t, conn, fmt.Sprintf(`SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name IN ('%s', '%s') AND NOT active`, slot, replication.SnapshotMarker(slot)))
}

// WaitSlotActive waits until a walsender holds the slot and the slot has
// its consistent point. A slot being created is active before that: rows
// committed then precede the point, and snapshot.mode=no_data rightly never
// sends them, so a test that inserted at that moment would wait in vain.
func WaitSlotActive(t testing.TB, conn *pgx.Conn, slot string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		var active bool
		err := conn.QueryRow(context.Background(), `SELECT active AND confirmed_flush_lsn IS NOT NULL FROM pg_replication_slots WHERE slot_name = $1`, slot).Scan(&active)
		if err == nil && active {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("slot %s not streaming after %s", slot, timeout)
}

// ConfirmedFlush returns the slot's confirmed_flush_lsn as a number.
func ConfirmedFlush(t testing.TB, conn *pgx.Conn, slot string) uint64 {
	t.Helper()
	var lsn uint64
	err := conn.QueryRow(context.Background(), `SELECT (confirmed_flush_lsn - '0/0')::bigint FROM pg_replication_slots WHERE slot_name = $1`, slot).Scan(&lsn)
	if err != nil {
		t.Fatalf("reading confirmed_flush_lsn of %s: %v", slot, err)
	}
	return lsn
}

// EndOffsets returns the next offset of every partition of topic, or nil
// when the topic does not exist yet (every offset is then 0).
func EndOffsets(t testing.TB, topic string) map[int]int64 {
	t.Helper()
	conn, err := kafka.Dial("tcp", KafkaBrokers(t))
	if err != nil {
		t.Fatalf("dialing Kafka: %v", err)
	}
	defer conn.Close()
	parts, err := conn.ReadPartitions(topic)
	if err != nil {
		if errors.Is(err, kafka.UnknownTopicOrPartition) {
			return nil
		}
		t.Fatalf("reading partitions of %s: %v", topic, err)
	}
	out := map[int]int64{}
	for _, p := range parts {
		pc, err := kafka.DialLeader(context.Background(), "tcp", KafkaBrokers(t), topic, p.ID)
		if err != nil {
			t.Fatalf("dialing leader of %s/%d: %v", topic, p.ID, err)
		}
		out[p.ID], err = pc.ReadLastOffset()
		pc.Close()
		if err != nil {
			t.Fatalf("reading end offset of %s/%d: %v", topic, p.ID, err)
		}
	}
	return out
}

// Consume reads every record of topic written after the offsets in from
// (see EndOffsets), across all partitions, until want records arrived or
// timeout passed; then it waits quiet more for records that should not be
// there. Records come back partition by partition, each in offset order.
func Consume(t testing.TB, topic string, from map[int]int64, want int, timeout, quiet time.Duration) []kafka.Message {
	t.Helper()
	brokers := KafkaBrokers(t)
	deadline := time.Now().Add(timeout)
	var parts []kafka.Partition
	for {
		conn, err := kafka.Dial("tcp", brokers)
		if err != nil {
			t.Fatalf("dialing Kafka: %v", err)
		}
		parts, err = conn.ReadPartitions(topic)
		conn.Close()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("topic %s never appeared: %v", topic, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var out []kafka.Message
	offsets := map[int]int64{}
	for _, p := range parts {
		offsets[p.ID] = from[p.ID]
	}
	quietUntil := time.Time{}
	for {
		progressed := false
		for _, p := range parts {
			msgs := fetch(t, brokers, topic, p.ID, offsets[p.ID])
			if len(msgs) > 0 {
				progressed = true
				offsets[p.ID] = msgs[len(msgs)-1].Offset + 1
				out = append(out, msgs...)
			}
		}
		now := time.Now()
		if len(out) >= want && quietUntil.IsZero() {
			quietUntil = now.Add(quiet)
		}
		if !quietUntil.IsZero() && now.After(quietUntil) {
			return out
		}
		if quietUntil.IsZero() && now.After(deadline) {
			t.Fatalf("topic %s: %d of %d records after %s", topic, len(out), want, timeout)
		}
		if !progressed {
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func fetch(t testing.TB, brokers, topic string, partition int, offset int64) []kafka.Message {
	t.Helper()
	conn, err := kafka.DialLeader(context.Background(), "tcp", brokers, topic, partition)
	if err != nil {
		t.Fatalf("dialing leader of %s/%d: %v", topic, partition, err)
	}
	defer conn.Close()
	last, err := conn.ReadLastOffset()
	if err != nil {
		t.Fatalf("end offset of %s/%d: %v", topic, partition, err)
	}
	if last <= offset {
		return nil
	}
	if _, err := conn.Seek(offset, kafka.SeekAbsolute); err != nil {
		t.Fatalf("seeking %s/%d to %d: %v", topic, partition, offset, err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	batch := conn.ReadBatch(1, 16<<20)
	var out []kafka.Message
	for {
		m, err := batch.ReadMessage()
		if err != nil {
			break
		}
		out = append(out, m)
		if m.Offset+1 >= last {
			break
		}
	}
	if err := batch.Close(); err != nil && len(out) == 0 {
		t.Fatalf("fetching %s/%d from %d: %v", topic, partition, offset, err)
	}
	return out
}

// RunExample runs an Example function that needs the bed (one without an
// `// Output:` comment, which go test only compiles) and returns what it
// printed. The example reads DATABASE_URL and KAFKA_BROKERS, as a program
// would; they are set from the bed for the call.
func RunExample(t *testing.T, example func()) string {
	t.Helper()
	t.Setenv("DATABASE_URL", Postgres(t))
	t.Setenv("KAFKA_BROKERS", KafkaBrokers(t))
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	out := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		out <- string(b)
	}()
	func() {
		defer func() { os.Stdout = stdout }()
		example()
	}()
	w.Close()
	return <-out
}
