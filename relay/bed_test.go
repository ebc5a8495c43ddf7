package relay_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxrelay/outboxrelay/capture"
	"github.com/outboxrelay/outboxrelay/internal/testbed"
	"github.com/outboxrelay/outboxrelay/relay"
	"github.com/outboxrelay/outboxrelay/replication"
	"github.com/outboxrelay/outboxrelay/router"
)

// sinkOnly is an at-least-once relay.Delivery of a test sink (holdingSink,
// valueSink), recording positions nowhere.
type sinkOnly struct {
	sink interface {
		Send(ctx context.Context, r *router.Record, ack func(error)) error
		Flush(ctx context.Context) error
	}
}

func (d sinkOnly) Open(context.Context, relay.Opening) (relay.Recorded, bool, error) {
	return relay.Recorded{}, false, nil
}
func (d sinkOnly) Confirmable(ck capture.Progress, _ relay.Streaming) capture.Progress { return ck }
func (d sinkOnly) Send(ctx context.Context, r *router.Record, ack func(error)) error {
	return d.sink.Send(ctx, r, ack)
}
func (d sinkOnly) End(capture.LSN) {}
func (d sinkOnly) Record(_ context.Context, _ capture.LSN, _ string, ack func(error)) error {
	ack(nil)
	return nil
}
func (d sinkOnly) Where() string                   { return "" }
func (d sinkOnly) Forget() string                  { return "" }
func (d sinkOnly) Flush(ctx context.Context) error { return d.sink.Flush(ctx) }
func (d sinkOnly) Err() error                      { return nil }
func (d sinkOnly) Close() error                    { return nil }

// holdingSink keeps every record and acknowledges only when told to, so a
// test can see what the slot confirms while Kafka "has not answered".
type holdingSink struct {
	mu      sync.Mutex
	held    []func(error)
	records []string // event ids, in send order
	topics  []string
	hold    bool
}

func (s *holdingSink) Send(_ context.Context, r *router.Record, ack func(error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records = append(s.records, r.EventID)
	s.topics = append(s.topics, r.Topic)
	if s.hold {
		s.held = append(s.held, ack)
		return nil
	}
	go ack(nil)
	return nil
}

func (s *holdingSink) Flush(ctx context.Context) error {
	for {
		s.mu.Lock()
		n := len(s.held)
		s.mu.Unlock()
		if n == 0 || !s.isHolding() {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (s *holdingSink) isHolding() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hold
}

// release acknowledges everything held, in reverse order: the checkpoint
// must not care about the order acks arrive in.
func (s *holdingSink) release() {
	s.mu.Lock()
	held := s.held
	s.held = nil
	s.hold = false
	s.mu.Unlock()
	for i := len(held) - 1; i >= 0; i-- {
		held[i](nil)
	}
}

func (s *holdingSink) sent() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.records...)
}

// streamFixture is a private outbox table, publication and slot.
type streamFixture struct {
	admin *pgx.Conn
	name  string
	cfg   replication.Config
	rt    *router.Router
}

func newStreamFixture(t *testing.T, extra map[string]string) *streamFixture {
	t.Helper()
	admin := testbed.Admin(t)
	name := fmt.Sprintf("st_%d", time.Now().UnixNano())
	testbed.Exec(t, admin,
		`CREATE SCHEMA `+name,
		`CREATE TABLE `+name+`.outbox (id bigserial PRIMARY KEY, aggregatetype text NOT NULL, aggregateid text NOT NULL, type text NOT NULL DEFAULT 'e', payload jsonb)`,
		`CREATE TABLE `+name+`.other (id bigserial PRIMARY KEY, junk text)`,
		`CREATE PUBLICATION `+name+` FOR TABLE `+name+`.outbox, `+name+`.other`,
		`GRANT USAGE ON SCHEMA `+name+` TO debezium`,
		`GRANT SELECT ON ALL TABLES IN SCHEMA `+name+` TO debezium`,
	)
	t.Cleanup(func() {
		ctx := context.Background()
		for i := 0; i < 50; i++ { // the walsender may take a moment to exit
			if _, err := admin.Exec(ctx, `SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1`, name); err == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		_, _ = admin.Exec(ctx, `DROP PUBLICATION IF EXISTS `+name)
		_, _ = admin.Exec(ctx, `DROP SCHEMA IF EXISTS `+name+` CASCADE`)
	})
	host, port := testbed.PostgresHostPort(t)
	m := map[string]string{
		"database.hostname":           host,
		"database.port":               strconv.Itoa(port),
		"database.user":               "debezium",
		"database.password":           "debezium@123",
		"database.dbname":             "order_db",
		"database.sslmode":            "disable",
		"slot.name":                   name,
		"publication.name":            name,
		"publication.autocreate.mode": "disabled",
		"table.include.list":          name + `\.outbox`,
		"snapshot.mode":               "no_data",
		"topic.prefix":                name,
		"status.update.interval.ms":   "1000",
	}
	for k, v := range extra {
		m[k] = v
	}
	cfg, err := replication.ParseConfig(m)
	if err != nil {
		t.Fatal(err)
	}
	rcfg, _, err := router.ParseConfig(map[string]string{
		"transforms":             "outbox",
		"transforms.outbox.type": "io.debezium.transforms.outbox.EventRouter",
		"transforms.outbox.table.expand.json.payload": "true",
		"topic.prefix": name,
	})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := router.New(rcfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return &streamFixture{admin: admin, name: name, cfg: cfg, rt: rt}
}

// run relays from the fixture's slot into s, as cmd/outboxrelay wires it.
func (f *streamFixture) run(t *testing.T, s *holdingSink) (stop func() error) {
	t.Helper()
	return f.runWith(t, sinkOnly{s}, nil)
}

// runWith is run through d, with the options edit changes (nil: none).
func (f *streamFixture) runWith(t *testing.T, d relay.Delivery, edit func(*relay.Options)) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	log := slog.New(slog.NewTextHandler(&testLog{t: t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	src, err := replication.NewSource(&f.cfg, replication.SourceOptions{Log: log, ConfirmEvery: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	opt := relay.Options{Source: src, Router: f.rt, Delivery: d, Log: log, HeartbeatTopic: f.cfg.HeartbeatTopic, MaxRetries: -1}
	if edit != nil {
		edit(&opt)
	}
	go func() { done <- relay.Run(ctx, opt) }()
	testbed.WaitSlotActive(t, f.admin, f.name, 30*time.Second)
	var once sync.Once
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				err = fmt.Errorf("relay.Run did not return within 30 s of cancel")
			}
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// testLog sends the relay's log to the test log, so it shows on failure.
type testLog struct{ t *testing.T }

func (l *testLog) Write(p []byte) (int, error) { l.t.Log(string(p)); return len(p), nil }

func (f *streamFixture) insert(t *testing.T, n int, agg string) {
	t.Helper()
	testbed.Exec(t, f.admin, fmt.Sprintf(
		`INSERT INTO %s.outbox (aggregatetype, aggregateid, payload) SELECT 'a', '%s', jsonb_build_object('i', g) FROM generate_series(1, %d) g`, f.name, agg, n))
}

func (f *streamFixture) walInsertLSN(t *testing.T) uint64 {
	t.Helper()
	var lsn uint64
	if err := f.admin.QueryRow(context.Background(), `SELECT (pg_current_wal_insert_lsn() - '0/0')::bigint`).Scan(&lsn); err != nil {
		t.Fatal(err)
	}
	return lsn
}

func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestConfirmedNeverPassesUnacknowledged pins invariant 1 on the real
// server: while Kafka holds acknowledgements back, confirmed_flush_lsn does
// not reach the transactions that sent records; once acks arrive (in
// reverse order), it reaches past the last commit.
func TestConfirmedNeverPassesUnacknowledged(t *testing.T) {
	f := newStreamFixture(t, nil)
	sink := &holdingSink{hold: true}
	f.run(t, sink)

	f.insert(t, 3, "x") // one transaction, three records
	// The insert position right after the commit is at or past that
	// transaction's end, and equal to it when nothing else writes WAL.
	// Confirming it (or more) would skip the transaction on a restart.
	// (Other tests' WAL before it may rightly be confirmed by a keepalive.)
	firstEnd := f.walInsertLSN(t)
	f.insert(t, 2, "y") // a second
	waitFor(t, "5 records sent", 20*time.Second, func() bool { return len(sink.sent()) == 5 })

	// Several status intervals pass: the slot must stay before the end of
	// the first held transaction.
	time.Sleep(2500 * time.Millisecond)
	if got := testbed.ConfirmedFlush(t, f.admin, f.name); got >= firstEnd {
		t.Fatalf("confirmed_flush_lsn %X reached the end of a transaction (%X) whose 3 records are unacknowledged", got, firstEnd)
	}
	last := f.walInsertLSN(t)
	sink.release()
	waitFor(t, "the slot to confirm past the last commit", 20*time.Second, func() bool {
		return testbed.ConfirmedFlush(t, f.admin, f.name) >= last
	})
}

// TestOtherTablesAndMessagesSkipped: rows of another table in the same
// publication and logical decoding messages are never routed, yet the slot
// moves past them.
func TestOtherTablesAndMessagesSkipped(t *testing.T) {
	f := newStreamFixture(t, nil)
	sink := &holdingSink{}
	f.run(t, sink)
	testbed.Exec(t, f.admin,
		`INSERT INTO `+f.name+`.other (junk) SELECT 'x' FROM generate_series(1, 100)`,
		`SELECT pg_logical_emit_message(true, 'p', 'transactional')`,
		`SELECT pg_logical_emit_message(false, 'p', 'not transactional')`,
	)
	last := f.walInsertLSN(t)
	waitFor(t, "the slot to confirm past the other table's rows", 20*time.Second, func() bool {
		return testbed.ConfirmedFlush(t, f.admin, f.name) >= last
	})
	if got := sink.sent(); len(got) != 0 {
		t.Fatalf("sent %d records for rows of another table / logical messages; want none", len(got))
	}
	f.insert(t, 1, "z")
	waitFor(t, "the outbox row", 20*time.Second, func() bool { return len(sink.sent()) == 1 })
}

func (s *holdingSink) sentTopics() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.topics...)
}

// TestHeartbeat: with heartbeat.interval.ms, the action query runs and
// heartbeat records go to __debezium-heartbeat.<topic.prefix>, while the
// action query's own rows (another table) are not routed.
func TestHeartbeat(t *testing.T) {
	f := newStreamFixture(t, nil)
	f.cfg.HeartbeatInterval = 200 * time.Millisecond
	f.cfg.HeartbeatQuery = `INSERT INTO ` + f.name + `.other (junk) VALUES ('heartbeat')`
	testbed.Exec(t, f.admin, `GRANT INSERT ON `+f.name+`.other TO debezium`, `GRANT USAGE ON SEQUENCE `+f.name+`.other_id_seq TO debezium`)
	sink := &holdingSink{}
	f.run(t, sink)
	want := "__debezium-heartbeat." + f.name
	waitFor(t, "three heartbeats", 20*time.Second, func() bool {
		n := 0
		for _, topic := range sink.sentTopics() {
			if topic != want {
				t.Fatalf("sent a record to %s; want only heartbeats to %s", topic, want)
			}
			n++
		}
		return n >= 3
	})
	var rows int
	if err := f.admin.QueryRow(context.Background(), `SELECT count(*) FROM `+f.name+`.other`).Scan(&rows); err != nil || rows < 3 {
		t.Fatalf("heartbeat.action.query ran %d times (err %v); want at least 3", rows, err)
	}
}

// TestReplicaIdentityFull pins a bug: with REPLICA IDENTITY FULL pgoutput
// flags every column as key, so comparing "key" columns made every update
// look like a primary-key change and published it. Only a change of the
// primary key (from the catalog) routes the update's create half.
func TestReplicaIdentityFull(t *testing.T) {
	f := newStreamFixture(t, nil)
	testbed.Exec(t, f.admin, `ALTER TABLE `+f.name+`.outbox REPLICA IDENTITY FULL`)
	sink := &holdingSink{}
	f.run(t, sink)
	f.insert(t, 1, "k")
	testbed.Exec(t, f.admin,
		`UPDATE `+f.name+`.outbox SET type = 'changed'`, // not a key change: skipped (table.op.invalid.behavior=warn)
		`UPDATE `+f.name+`.outbox SET id = id + 100`,    // a key change: its create half is routed
	)
	f.insert(t, 1, "end")
	waitFor(t, "the last insert", 20*time.Second, func() bool { return len(sink.sent()) >= 3 })
	time.Sleep(300 * time.Millisecond)
	if got := sink.sent(); len(got) != 3 {
		t.Fatalf("sent %d records (%v); want 3: the insert, the key-changing update, the last insert", len(got), got)
	}
}

// TestDropSlotOnStop: with slot.drop.on.stop the slot is gone after an
// orderly stop, once everything sent was acknowledged; without it, it stays.
func TestDropSlotOnStop(t *testing.T) {
	for _, drop := range []bool{false, true} {
		t.Run(fmt.Sprintf("drop=%t", drop), func(t *testing.T) {
			f := newStreamFixture(t, map[string]string{"slot.drop.on.stop": strconv.FormatBool(drop)})
			sink := &holdingSink{}
			stop := f.run(t, sink)
			f.insert(t, 3, "d")
			waitFor(t, "the rows", 20*time.Second, func() bool { return len(sink.sent()) == 3 })
			if err := stop(); err != nil {
				t.Fatalf("Run: %v", err)
			}
			var n int
			if err := f.admin.QueryRow(context.Background(), `SELECT count(*) FROM pg_replication_slots WHERE slot_name = $1`, f.name).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if want := map[bool]int{false: 1, true: 0}[drop]; n != want {
				t.Fatalf("slot.drop.on.stop=%t: %d slots named %s after the stop; want %d", drop, n, f.name, want)
			}
		})
	}
}

// TestInitialOnlyDoesNotStream: snapshot.mode=initial_only reads the rows
// once and stops; started again on the same slot, it stops at once
// without streaming what was inserted meanwhile.
func TestInitialOnlyDoesNotStream(t *testing.T) {
	f := newStreamFixture(t, map[string]string{"snapshot.mode": "initial_only"})
	f.insert(t, 5, "s")
	for round := 1; round <= 2; round++ {
		sink := &holdingSink{}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		log := slog.New(slog.NewTextHandler(&testLog{t: t}, nil))
		src, err := replication.NewSource(&f.cfg, replication.SourceOptions{Log: log})
		if err != nil {
			t.Fatal(err)
		}
		err = relay.Run(ctx, relay.Options{Source: src, Router: f.rt, Delivery: sinkOnly{sink}, Log: log, MaxRetries: -1})
		timedOut := ctx.Err()
		cancel()
		if err != nil || timedOut != nil {
			t.Fatalf("round %d: Run returned %v (ctx %v); want it to stop by itself with nil", round, err, timedOut)
		}
		want := map[int]int{1: 5, 2: 0}[round]
		if got := len(sink.sent()); got != want {
			t.Fatalf("round %d: sent %d records; want %d", round, got, want)
		}
		f.insert(t, 2, "later")
	}
}
