package testbed

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/segmentio/kafka-go"

	"github.com/outboxrelay/outboxrelay/internal/kafkaread"
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
	ends, err := kafkaread.Reader{Broker: KafkaBrokers(t)}.EndOffsets(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	return ends
}

// Consume reads every record of topic written after the offsets in from
// (see EndOffsets; nil: from the start), across all partitions, until want
// records arrived or timeout passed; then it waits quiet more for records
// that should not be there. Each partition's records come in offset order.
func Consume(t testing.TB, topic string, from map[int]int64, want int, timeout, quiet time.Duration) []kafka.Message {
	t.Helper()
	msgs, err := kafkaread.Reader{Broker: KafkaBrokers(t)}.Wait(context.Background(), topic, from, want, timeout, quiet)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
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
