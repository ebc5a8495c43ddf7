package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/segmentio/kafka-go"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
)

// relayProc is an outboxrelay `run` running in-process, exactly as main runs it.
type relayProc struct {
	cancel context.CancelFunc
	done   chan error
	log    *testbed.SyncBuffer
}

func startRelay(t *testing.T, configPath string) *relayProc {
	t.Helper()
	return startRelayWith(t, configPath, testbed.KafkaBrokers(t))
}

// startRelayWith runs the relay against the given Kafka bootstrap address,
// with extra flags for run (e.g. --http-addr).
func startRelayWith(t *testing.T, configPath, brokers string, extra ...string) *relayProc {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &relayProc{cancel: cancel, done: make(chan error, 1), log: &testbed.SyncBuffer{}}
	args := append([]string{"run", "--config", configPath, "--kafka-brokers", brokers, "--log-format", "text"}, extra...)
	go func() {
		r.done <- run(ctx, args, r.log, r.log)
	}()
	t.Cleanup(func() {
		r.cancel()
		var err error
		select {
		case err = <-r.done:
		case <-time.After(30 * time.Second):
			err = errors.New("still running 30 s after cancel")
		}
		if t.Failed() {
			t.Logf("relay log (run returned %v):\n%s", err, r.log.String())
		}
	})
	return r
}

// startRelayHTTP runs the relay with its HTTP server on a port the kernel
// picks (127.0.0.1:0) and returns the address it serves on, read from its
// log. A port chosen by the test and released before the relay binds it
// can be taken meanwhile by any outgoing connection.
func startRelayHTTP(t *testing.T, configPath string) (*relayProc, string) {
	t.Helper()
	r := startRelayWith(t, configPath, testbed.KafkaBrokers(t), "--http-addr", "127.0.0.1:0")
	serving := regexp.MustCompile(`msg="http: serving[^"]*" addr=(\S+)`)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := serving.FindStringSubmatch(r.log.String()); m != nil {
			return r, m[1]
		}
		select {
		case err := <-r.done:
			r.done <- err // for Cleanup
			t.Fatalf("the relay stopped before serving HTTP: %v\n%s", err, r.log.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the relay did not log its HTTP address within 30 s:\n%s", r.log.String())
		}
	}
}

// stop ends the relay as SIGTERM does and returns its error.
func (r *relayProc) stop(t *testing.T) error {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		r.done <- err // for Cleanup
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("relay did not stop within 30 s after cancel")
		return nil
	}
}

// exampleConfig writes the example connector JSON with only the bed's port
// changed, and any overrides applied (a nil value deletes the key).
func exampleConfig(t *testing.T, overrides map[string]any) string {
	t.Helper()
	host, port := testbed.PostgresHostPort(t)
	all := map[string]any{"database.hostname": host, "database.port": strconv.Itoa(port)}
	for k, v := range overrides {
		all[k] = v
	}
	return testbed.ConnectorFile(t, "", filepath.Join("..", "..", "testdata", "connector.json"), all)
}

// prepareExample creates the fixture's outbox table, role grant and
// publication (as the demo does) and removes the example slot.
func prepareExample(t *testing.T, admin *pgx.Conn) {
	t.Helper()
	for _, f := range []string{"outbox.sql", "role.sql"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "sql", f))
		if err != nil {
			t.Fatal(err)
		}
		testbed.Exec(t, admin, string(b))
	}
	testbed.Exec(t, admin, `DO $$BEGIN
		IF NOT EXISTS (SELECT 1 FROM pg_publication WHERE pubname = 'order_db_outbox') THEN
			CREATE PUBLICATION order_db_outbox FOR TABLE public.outbox;
		END IF; END$$`)
	testbed.DropSlot(t, admin, "public_outbox")
}

func header(m kafka.Message, key string) (string, bool) {
	for _, h := range m.Headers {
		if h.Key == key {
			return string(h.Value), true
		}
	}
	return "", false
}

func insertExample(t *testing.T, admin *pgx.Conn, aggType, aggID, evType, payload string) string {
	t.Helper()
	var id string
	err := admin.QueryRow(context.Background(),
		`INSERT INTO public.outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ($1, $2, $3, $4) RETURNING message_id::text`,
		aggType, aggID, evType, payload).Scan(&id)
	if err != nil {
		t.Fatalf("inserting %s event: %v", aggType, err)
	}
	return id
}

// TestExampleEvents: the two events of the design documents arrive exactly
// as a consumer of Debezium's EventRouter reads them, from the example
// connector JSON with only host, port and Kafka address changed; UPDATE,
// DELETE and a rolled-back transaction send nothing; a new aggregate type
// gets a new topic.
func TestExampleEvents(t *testing.T) {
	admin := testbed.Admin(t)
	prepareExample(t, admin)
	newType := fmt.Sprintf("shipments%d", time.Now().UnixNano())
	fromOrders, fromPayments := testbed.EndOffsets(t, "orders"), testbed.EndOffsets(t, "payments")

	r := startRelay(t, exampleConfig(t, nil))
	testbed.WaitSlotActive(t, admin, "public_outbox", 30*time.Second)

	orderID := insertExample(t, admin, "orders", "9191642889", "paid", `{"orderId":9191642889,"payableAmount":199.00}`)
	payID := insertExample(t, admin, "payments", "pay-889900", "PaymentSucceeded", `{"paymentId":"pay-889900","channel":"wallet"}`)
	testbed.Exec(t, admin,
		`UPDATE public.outbox SET status = 'SENT', sent_at = now() WHERE message_id = '`+orderID+`'`,
		`DELETE FROM public.outbox WHERE message_id = '`+payID+`'`,
		`BEGIN; INSERT INTO public.outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('orders', 'rolled-back', 'x', '{}'); ROLLBACK`,
	)
	shipID := insertExample(t, admin, newType, "ship-1", "Shipped", `{"n": [1, 2.50, null, []]}`)
	// The WAL insert position right after the last commit is that commit's
	// end: what an orderly stop must have confirmed.
	var lastEnd uint64
	if err := admin.QueryRow(context.Background(), `SELECT (pg_current_wal_insert_lsn() - '0/0')::bigint`).Scan(&lastEnd); err != nil {
		t.Fatal(err)
	}

	check := func(topic string, from map[int]int64, id, key, evType, value string) {
		t.Helper()
		msgs := testbed.Consume(t, topic, from, 1, 30*time.Second, time.Second)
		if len(msgs) != 1 {
			t.Fatalf("topic %s: %d records, want exactly 1 (UPDATE, DELETE and rollback must send nothing)", topic, len(msgs))
		}
		m := msgs[0]
		if len(m.Headers) != 2 || m.Headers[0].Key != "id" || m.Headers[1].Key != "eventType" {
			t.Errorf("topic %s: headers %v; want id then eventType", topic, m.Headers)
		}
		if got, _ := header(m, "id"); got != id {
			t.Errorf("topic %s: header id %q, want %q", topic, got, id)
		}
		if got, _ := header(m, "eventType"); got != evType {
			t.Errorf("topic %s: header eventType %q, want %q", topic, got, evType)
		}
		if string(m.Key) != key {
			t.Errorf("topic %s: key %q, want %q", topic, m.Key, key)
		}
		if string(m.Value) != value {
			t.Errorf("topic %s: value %s, want %s", topic, m.Value, value)
		}
	}
	check("orders", fromOrders, orderID, "9191642889", "paid", `{"orderId":9191642889,"payableAmount":199.00}`)
	check("payments", fromPayments, payID, "pay-889900", "PaymentSucceeded", `{"channel":"wallet","paymentId":"pay-889900"}`)
	check(newType, nil, shipID, "ship-1", "Shipped", `{"n":[1,2.50,null,[]]}`)

	if err := r.stop(t); err != nil {
		t.Fatalf("relay stopped with %v; want an orderly stop", err)
	}
	if got := testbed.ConfirmedFlush(t, admin, "public_outbox"); got < lastEnd {
		t.Errorf("after an orderly stop the slot confirmed %X; want the last commit's end %X", got, lastEnd)
	}
}

// poisonSetup starts from the example with a private slot and inserts a
// good row, a poison row (its aggregate_type is not a legal topic name) and
// another good row, each in its own transaction.
func poisonSetup(t *testing.T, overrides map[string]any) (admin *pgx.Conn, slot, config string, ids [3]string) {
	t.Helper()
	admin = testbed.Admin(t)
	prepareExample(t, admin)
	slot = fmt.Sprintf("poison_%d", time.Now().UnixNano())
	t.Cleanup(func() { testbed.DropSlot(t, admin, slot) })
	overrides["slot.name"] = slot
	config = exampleConfig(t, overrides)
	return admin, slot, config, ids
}

// TestPoisonRowStops: with errors.tolerance=none (the default) the relay
// confirms everything before a poison row, stops with an error naming the
// row's event id and LSN, and stops at the same row again after a restart.
func TestPoisonRowStops(t *testing.T) {
	admin, slot, config, _ := poisonSetup(t, map[string]any{})
	r := startRelay(t, config)
	testbed.WaitSlotActive(t, admin, slot, 30*time.Second)
	goodType := fmt.Sprintf("good%d", time.Now().UnixNano())
	first := insertExample(t, admin, goodType, "a", "x", `{"n":1}`)
	bad := insertExample(t, admin, "not a topic", "a", "x", `{"n":2}`)
	insertExample(t, admin, goodType, "a", "x", `{"n":3}`)

	var err error
	select {
	case err = <-r.done:
		r.done <- err
	case <-time.After(30 * time.Second):
		t.Fatal("relay did not stop at the poison row")
	}
	if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "aggregate_type") {
		t.Fatalf("relay stopped with %v; want an error naming event id %s and the column aggregate_type", err, bad)
	}
	t.Logf("the relay stopped with: %v", err)
	msgs := testbed.Consume(t, goodType, nil, 1, 30*time.Second, time.Second)
	if len(msgs) != 1 || string(msgs[0].Headers[0].Value) != first {
		t.Fatalf("want exactly the row before the poison row (%s) published, got %d records", first, len(msgs))
	}
	var badLSN uint64
	if err := admin.QueryRow(context.Background(), `SELECT (confirmed_flush_lsn - '0/0')::bigint FROM pg_replication_slots WHERE slot_name = $1`, slot).Scan(&badLSN); err != nil {
		t.Fatal(err)
	}

	// A restart stops at the same row: nothing is skipped.
	r2 := startRelay(t, config)
	select {
	case err = <-r2.done:
		r2.done <- err
	case <-time.After(30 * time.Second):
		t.Fatal("restarted relay did not stop at the poison row again")
	}
	if err == nil || !strings.Contains(err.Error(), bad) {
		t.Fatalf("restarted relay: %v; want the same poison row %s", err, bad)
	}
	if got := testbed.ConfirmedFlush(t, admin, slot); got != badLSN {
		t.Fatalf("confirmed_flush_lsn moved from %X to %X across a restart that stopped at the poison row", badLSN, got)
	}
}

// TestPoisonRowDeadLettered: with errors.tolerance=all and a dead-letter
// topic, the poison row goes there with Connect's error headers plus its LSN
// and table, and the rows after it are published.
func TestPoisonRowDeadLettered(t *testing.T) {
	dlq := fmt.Sprintf("dlq-%d", time.Now().UnixNano())
	admin, slot, config, _ := poisonSetup(t, map[string]any{
		"errors.tolerance":                  "all",
		"errors.deadletterqueue.topic.name": dlq,
	})
	startRelay(t, config)
	testbed.WaitSlotActive(t, admin, slot, 30*time.Second)
	goodType := fmt.Sprintf("good%d", time.Now().UnixNano())
	insertExample(t, admin, goodType, "a", "x", `{"n":1}`)
	bad := insertExample(t, admin, "not a topic", "a", "x", `{"n":2}`)
	insertExample(t, admin, goodType, "a", "x", `{"n":3}`)

	if msgs := testbed.Consume(t, goodType, nil, 2, 30*time.Second, time.Second); len(msgs) != 2 {
		t.Fatalf("want both good rows published around the poison row, got %d", len(msgs))
	}
	msgs := testbed.Consume(t, dlq, nil, 1, 30*time.Second, time.Second)
	if len(msgs) != 1 {
		t.Fatalf("dead-letter topic has %d records, want 1", len(msgs))
	}
	m := msgs[0]
	if string(m.Key) != bad {
		t.Errorf("dead letter key %q, want the event id %s", m.Key, bad)
	}
	if !strings.Contains(string(m.Value), `"aggregate_type":"not a topic"`) {
		t.Errorf("dead letter value %s; want the row's columns", m.Value)
	}
	for _, h := range []string{"__connect.errors.exception.class.name", "__connect.errors.exception.message", "__outboxrelay.lsn", "__outboxrelay.source.table"} {
		if v, ok := header(m, h); !ok || v == "" {
			t.Errorf("dead letter lacks header %s (headers %v)", h, m.Headers)
		}
	}
	if v, _ := header(m, "__outboxrelay.source.table"); v != "public.outbox" {
		t.Errorf("source table header %q", v)
	}
	if v, _ := header(m, "__connect.errors.exception.class.name"); v != "*router.RowError" {
		t.Errorf("exception class header %q; want *router.RowError for a route value that is no legal topic", v)
	}
}
