package e2e_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/segmentio/kafka-go"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
	"github.com/outboxrelay/outboxrelay/internal/verify"
)

// privateBed is a second PostgreSQL and Kafka that only the fault tests
// use: they kill its broker and restart its server, which the shared bed's
// other tests must never see (testbed.PrivateBed). Its methods here are the
// fault tests' fixture, relay and verification on that bed.
type privateBed struct {
	*testbed.PrivateBed
}

// startPrivateBed brings a private bed up (testbed.StartPrivateBed).
func startPrivateBed(t *testing.T) *privateBed {
	t.Helper()
	return &privateBed{testbed.StartPrivateBed(t)}
}

// faultTopics are the aggregate types the fault load and burst route to.
var faultTopics = []string{"order", "customer", "bulk"}

// newFixture makes a fixture on the private server: schema, outbox with an
// ord column (increasing with commit order within each aggregate, see
// ordPerTx), publication; the slot is the relay's. The slot is dropped at the
// end, so that the next test's walsender does not share the server with it.
func (b *privateBed) newFixture(t *testing.T, short string) *fixture {
	t.Helper()
	f := &fixture{admin: b.Connect(t), name: fmt.Sprintf("fault_%s_%d", short, time.Now().UnixNano()%1e9)}
	testbed.Exec(t, f.admin,
		`CREATE SCHEMA `+f.name,
		`CREATE TABLE `+f.name+`.outbox (id bigserial PRIMARY KEY, aggregatetype text NOT NULL, aggregateid text NOT NULL, type text NOT NULL DEFAULT 'e', ord bigint NOT NULL, payload jsonb)`,
		`CREATE PUBLICATION `+f.name+` FOR TABLE `+f.name+`.outbox`,
		`GRANT USAGE ON SCHEMA `+f.name+` TO debezium`,
		`GRANT SELECT ON ALL TABLES IN SCHEMA `+f.name+` TO debezium`,
	)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, b.PostgresURL) // f.admin may be one a restart broke
		if err != nil {
			t.Logf("clean-up: connecting to the private PostgreSQL: %v", err)
			return
		}
		defer conn.Close(context.Background())
		for ctx.Err() == nil {
			tag, err := conn.Exec(ctx, `SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1 AND NOT active`, f.name)
			if err == nil && tag.RowsAffected() > 0 {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("clean-up: slot %s not dropped", f.name)
	})
	return f
}

// config is the fixture's connector config pointed at the private server,
// with topics of 3 partitions, so that aggregates share partitions.
func (b *privateBed) config(t *testing.T, f *fixture, extra ...map[string]string) string {
	t.Helper()
	host, port := b.PostgresHostPort(t)
	m := map[string]string{
		"database.hostname":                 host,
		"database.port":                     strconv.Itoa(port),
		"topic.creation.default.partitions": "3",
	}
	for _, e := range extra {
		maps.Copy(m, e)
	}
	return f.config(t, m)
}

// logFile is a file in the test's temporary directory that every relay of
// the test appends its log to.
func logFile(t *testing.T, name string) *os.File {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// startRelay runs the relay against the private bed, its log appended to
// log. Cleanup kills it if it still runs, and shows the log's end when the
// test failed.
func (b *privateBed) startRelay(t *testing.T, cfg string, log *os.File, extraArgs ...string) *relayProc {
	t.Helper()
	if relayBinary == "" {
		t.Fatal("the relay binary was not built (TestMain builds it only when the bed's variables are set)")
	}
	args := append([]string{"run", "--config", cfg, "--kafka-brokers", b.KafkaBrokers, "--log-format", "text"}, extraArgs...)
	cmd := exec.Command(relayBinary, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the relay: %v", err)
	}
	r := &relayProc{cmd: cmd, logPath: log.Name(), done: make(chan struct{})}
	go func() {
		r.waitErr = cmd.Wait()
		close(r.done)
	}()
	t.Cleanup(func() {
		select {
		case <-r.done:
			return
		default:
		}
		_ = cmd.Process.Kill()
		<-r.done
		if t.Failed() {
			t.Logf("relay (pid %d) log %s, last lines:\n%s", cmd.Process.Pid, r.logPath, r.logTail(60))
		}
	})
	return r
}

// exited reports whether the relay has exited.
func (r *relayProc) exited() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// partitionKey names one partition of one topic.
type partitionKey struct {
	topic     string
	partition int
}

// endOffsets returns the next offset of every partition of the topics that
// exist, in one metadata and one ListOffsets request. A Transport of its
// own: kafka-go's shared one answers metadata from a cache that may not
// know a topic the relay created a moment ago.
func endOffsets(ctx context.Context, brokers string, topics []string) (map[partitionKey]int64, error) {
	transport := &kafka.Transport{}
	defer transport.CloseIdleConnections()
	client := &kafka.Client{Addr: kafka.TCP(brokers), Timeout: 10 * time.Second, Transport: transport}
	meta, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: topics})
	if err != nil {
		return nil, fmt.Errorf("metadata of %v: %w", topics, err)
	}
	req := &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{}}
	for _, tm := range meta.Topics {
		if tm.Error != nil {
			continue // not created yet
		}
		for _, p := range tm.Partitions {
			req.Topics[tm.Name] = append(req.Topics[tm.Name], kafka.LastOffsetOf(p.ID))
		}
	}
	out := map[partitionKey]int64{}
	if len(req.Topics) == 0 {
		return out, nil
	}
	res, err := client.ListOffsets(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("end offsets of %v: %w", topics, err)
	}
	for topic, parts := range res.Topics {
		for _, p := range parts {
			if p.Error != nil {
				return nil, fmt.Errorf("end offset of %s/%d: %w", topic, p.Partition, p.Error)
			}
			out[partitionKey{topic, p.Partition}] = p.LastOffset
		}
	}
	return out, nil
}

// topicNames are the fixture's topics for the aggregate types.
func (f *fixture) topicNames(aggTypes []string) []string {
	names := make([]string, len(aggTypes))
	for i, a := range aggTypes {
		names[i] = f.topic(a)
	}
	return names
}

// verifyOutbox reads the fixture's outbox (commit order: the ord column)
// and every record of its topics on the private broker, and checks them
// with internal/verify. It also returns what it read, for the callers'
// own accounting of duplicates.
func (b *privateBed) verifyOutbox(t *testing.T, f *fixture) (verify.Report, []verify.Event, []verify.Delivery) {
	t.Helper()
	return b.verifyWith(t, f, verify.Topics)
}

// verifyCommitted checks the fixture's outbox against its topics read as
// a read_committed consumer reads them.
func (b *privateBed) verifyCommitted(t *testing.T, f *fixture) verify.Report {
	t.Helper()
	rep, _, _ := b.verifyWith(t, f, verify.TopicsCommitted)
	return rep
}

// verifyWith is verifyOutbox with the topics read by read.
func (b *privateBed) verifyWith(t *testing.T, f *fixture, read func(context.Context, *kafka.Dialer, string, []string, string) ([]verify.Delivery, error)) (verify.Report, []verify.Event, []verify.Delivery) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	events, err := verify.Outbox(ctx, f.admin, verify.OutboxQuery{
		Table: f.name + ".outbox", IDColumn: "id", KeyColumn: "aggregateid", OrderBy: "ord",
	})
	if err != nil {
		t.Fatal(err)
	}
	deliveries, err := read(ctx, &kafka.Dialer{Timeout: 10 * time.Second}, b.KafkaBrokers, f.topicNames(faultTopics), "id")
	if err != nil {
		t.Fatal(err)
	}
	return verify.Check(events, deliveries), events, deliveries
}

// requireComplete fails the test when the report shows a missing event,
// an unknown delivery or an aggregate out of order.
func requireComplete(t *testing.T, what string, rep verify.Report) {
	t.Helper()
	t.Logf("%s: verify: %s", what, firstLine(rep.String()))
	if !rep.OK() || len(rep.Unknown) != 0 || rep.Events == 0 {
		t.Errorf("%s: want every event delivered, first deliveries in commit order, no unknown records:\n%s", what, rep)
	}
}
