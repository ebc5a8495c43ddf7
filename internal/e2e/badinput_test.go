package e2e_test

// Bad input (issue 5): one test per input the relay must refuse, each
// checking the exact message a user reads on stderr and the exit code (1
// when the relay stops on an error at run time, 2 for a bad config). With
// errors.tolerance=none (the default) a poison row stops the relay after
// everything before it was published and confirmed, never after it.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/segmentio/kafka-go"

	"github.com/outboxrelay/outboxrelay/internal/testbed"

	"github.com/outboxrelay/outboxrelay/capture"
)

// committed is one outbox row committed in a transaction of its own.
type committed struct {
	id int64
	// inside is the WAL insert position after the INSERT, before COMMIT:
	// the transaction's commit record starts at or after it. after is the
	// position once COMMIT returned, past the end of that record.
	inside, after capture.LSN
}

// insertCommitted runs one INSERT … RETURNING id in its own transaction.
func insertCommitted(t *testing.T, conn *pgx.Conn, sql string, args ...any) committed {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatalf("BEGIN: %v", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	var c committed
	if err := tx.QueryRow(ctx, sql, args...).Scan(&c.id); err != nil {
		t.Fatalf("%s: %v", firstLine(sql), err)
	}
	const insertLSN = `SELECT (pg_current_wal_insert_lsn() - '0/0')::bigint`
	var lsn uint64
	if err := tx.QueryRow(ctx, insertLSN).Scan(&lsn); err != nil {
		t.Fatalf("reading the WAL insert position: %v", err)
	}
	c.inside = capture.LSN(lsn)
	if err := tx.Commit(ctx); err != nil {
		t.Fatalf("COMMIT: %v", err)
	}
	if err := conn.QueryRow(ctx, insertLSN).Scan(&lsn); err != nil {
		t.Fatalf("reading the WAL insert position: %v", err)
	}
	c.after = capture.LSN(lsn)
	return c
}

// goodRowSQL inserts a row routed to the topic f.topic("good").
func goodRowSQL(f *fixture) string {
	return `INSERT INTO ` + f.name + `.outbox (aggregatetype, aggregateid, payload) VALUES ('good', 'k', '{"n": 1}') RETURNING id`
}

// waitRelayExit waits up to within for the relay to stop by itself and
// returns its exit code and the error it printed last on stderr (the text
// after "outboxrelay: ", to the end of its output).
func waitRelayExit(t *testing.T, r *relayProc, within time.Duration) (int, string) {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(within):
		t.Fatalf("the relay still runs %s after the bad input; want it to stop with an error; log:\n%s", within, r.logTail(40))
	}
	code := r.cmd.ProcessState.ExitCode()
	out := "\n" + r.log()
	i := strings.LastIndex(out, "\noutboxrelay: ")
	if i < 0 {
		return code, ""
	}
	return code, strings.TrimRight(out[i+len("\noutboxrelay: "):], "\n")
}

// wantExit checks the exit code and the exact error message.
func wantExit(t *testing.T, code int, msg string, wantCode int, wantMsg string) {
	t.Helper()
	t.Logf("exit code %d; error: %s", code, msg)
	if code != wantCode {
		t.Errorf("exit code %d, want %d", code, wantCode)
	}
	if msg != wantMsg {
		t.Errorf("the relay's error\n got: %s\nwant: %s", msg, wantMsg)
	}
}

var lsnInMessage = regexp.MustCompile(`(?:LSN |lsn=)([0-9A-F]{1,8}/[0-9A-F]{1,8})`)

// messageLSN returns the first LSN a message names, checking that it is the
// commit LSN of row c (between c.inside and c.after). On a mismatch it
// marks the test failed and returns a placeholder, so that the exact
// comparison shows the whole message.
func messageLSN(t *testing.T, msg string, c committed) string {
	t.Helper()
	m := lsnInMessage.FindStringSubmatch(msg)
	if m == nil {
		t.Errorf("the message names no LSN: %s", msg)
		return "<LSN>"
	}
	lsn, err := capture.ParseLSN(m[1])
	if err != nil {
		t.Errorf("the message's LSN %s: %v", m[1], err)
		return "<LSN>"
	}
	if lsn < c.inside || lsn >= c.after {
		t.Errorf("the message names LSN %s; the row (id %d) committed between %s and %s", lsn, c.id, c.inside, c.after)
		return "<LSN of the row>"
	}
	return m[1]
}

// poisonCase is a relay stopped by a poison row with errors.tolerance=none.
type poisonCase struct {
	r      *relayProc
	good   *committed // the row committed before the poison row, if any
	poison committed
	code   int
	msg    string
	lsn    string // the LSN the message names, checked to be the poison row's
}

// stopsAtPoison starts the relay on cfg, commits a good row (when withGood)
// and then the poison row, and checks what errors.tolerance=none promises:
// the relay exits by itself, the good row is on its topic exactly once, and
// the slot confirmed the good row but not the poison row.
func stopsAtPoison(t *testing.T, f *fixture, cfg string, withGood bool, poisonSQL string, args ...any) poisonCase {
	t.Helper()
	var pc poisonCase
	pc.r = startRelay(t, cfg)
	f.waitStreaming(t)
	if withGood {
		g := insertCommitted(t, f.admin, goodRowSQL(f))
		pc.good = &g
	}
	pc.poison = insertCommitted(t, f.admin, poisonSQL, args...)
	pc.code, pc.msg = waitRelayExit(t, pc.r, 30*time.Second)
	pc.lsn = messageLSN(t, pc.msg, pc.poison)

	waitSlotInactive(t, f.admin, f.name, 10*time.Second)
	confirmed := confirmedFlush(t, f.admin, f.name)
	if pc.good != nil {
		recs := f.consume(t, f.topic("good"), 1, 30*time.Second, 300*time.Millisecond)
		if len(recs) != 1 || recs[0].ID != pc.good.id {
			t.Errorf("topic %s: %d records %v; want exactly the row before the poison row (id %d)", f.topic("good"), len(recs), countIDs(recs), pc.good.id)
		}
		if confirmed <= pc.good.inside {
			t.Errorf("the slot confirmed %s, not the row before the poison row (committed after %s)", confirmed, pc.good.inside)
		}
	}
	if lsn, err := capture.ParseLSN(pc.lsn); err == nil && confirmed > lsn {
		t.Errorf("the slot confirmed %s, past the poison row's commit %s: a restart would skip it", confirmed, lsn)
	}
	return pc
}

// relaxNulls lets the fixture's outbox take NULL route and key values.
func relaxNulls(t *testing.T, f *fixture) {
	t.Helper()
	testbed.Exec(t, f.admin, `ALTER TABLE `+f.name+`.outbox ALTER COLUMN aggregatetype DROP NOT NULL, ALTER COLUMN aggregateid DROP NOT NULL`)
}

// TestBadInputNullRoute: a NULL aggregatetype (route.by.field) has no
// topic. The relay stops at it, naming the row, the column, the key and the
// fix; a restart stops at the same row again and confirms nothing more.
func TestBadInputNullRoute(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "nullroute")
	relaxNulls(t, f)
	cfg := f.config(t, nil)
	pc := stopsAtPoison(t, f, cfg, true,
		`INSERT INTO `+f.name+`.outbox (aggregatetype, aggregateid, payload) VALUES (NULL, 'k', '{"n": 2}') RETURNING id`)
	want := fmt.Sprintf(`routing row at LSN %s of %s.outbox (event id %d): column "aggregatetype" (from transforms.outbox.route.by.field): the route value is NULL, so the row has no topic; give every outbox row a value in this column`,
		pc.lsn, f.name, pc.poison.id)
	wantExit(t, pc.code, pc.msg, 1, want)

	before := confirmedFlush(t, f.admin, f.name)
	r2 := startRelay(t, cfg)
	code, msg := waitRelayExit(t, r2, 30*time.Second)
	if code != 1 || msg != pc.msg {
		t.Errorf("after a restart: exit code %d, error %s; want 1 and the same error", code, msg)
	}
	waitSlotInactive(t, f.admin, f.name, 10*time.Second)
	if after := confirmedFlush(t, f.admin, f.name); after != before {
		t.Errorf("a restart that stopped at the poison row moved the slot from %s to %s", before, after)
	}
}

// TestBadInputNullKey: a NULL aggregateid (the key column) is not poison.
// Kafka allows a null key, and Debezium's EventRouter with StringConverter
// sends one (spec section 2: "NULL stays a null key"); the relay does the
// same, and docs/compatibility.md (The record) says so.
func TestBadInputNullKey(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "compatibility.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "StringConverter: the text of the key column (NULL → null key)") {
		t.Errorf("docs/compatibility.md does not document that a NULL key column gives a null record key")
	}

	f := newFixture(t, "nullkey")
	relaxNulls(t, f)
	r := startRelay(t, f.config(t, nil))
	f.waitStreaming(t)
	var ids []int64
	for i, key := range []*string{nil, new(""), new("k")} {
		ids = append(ids, insertIDs(t, f.admin, `INSERT INTO `+f.name+`.outbox (aggregatetype, aggregateid, payload) VALUES ('orders', $1, jsonb_build_object('n', $2::int)) RETURNING id`, key, i+1)...)
	}
	testbed.Consume(t, f.topic("orders"), nil, 3, 30*time.Second, 300*time.Millisecond)
	recs := fetchRaw(t, f.topic("orders"))
	if len(recs) != 3 {
		t.Fatalf("topic %s: %d records, want 3", f.topic("orders"), len(recs))
	}
	for i, want := range []struct {
		key   []byte
		value string
	}{{nil, `{"n":1}`}, {[]byte{}, `{"n":2}`}, {[]byte("k"), `{"n":3}`}} {
		rec := recs[i]
		if id, _ := strconv.ParseInt(headerValue(rec.headers, "id"), 10, 64); id != ids[i] {
			t.Errorf("record %d: id %d, want %d", i, id, ids[i])
		}
		if (rec.key == nil) != (want.key == nil) || string(rec.key) != string(want.key) {
			t.Errorf("record %d (id %d): key %s, want %s", i, ids[i], showBytes(rec.key), showBytes(want.key))
		}
		if string(rec.value) != want.value {
			t.Errorf("record %d (id %d): value %s, want %s", i, ids[i], rec.value, want.value)
		}
	}
	r.stop(t, 30*time.Second)
}

// TestBadInputPayloadNotJSON: with table.expand.json.payload on, a text
// payload that is not JSON is sent as a JSON string, as Debezium falls back
// to the escaped string, with one warning naming the row; a JSON text
// payload next to it is expanded.
func TestBadInputPayloadNotJSON(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "notjson")
	testbed.Exec(t, f.admin, `ALTER TABLE `+f.name+`.outbox ALTER COLUMN payload TYPE text USING payload::text`)
	r := startRelay(t, f.config(t, nil))
	f.waitStreaming(t)
	bad := insertCommitted(t, f.admin, `INSERT INTO `+f.name+`.outbox (aggregatetype, aggregateid, payload) VALUES ('orders', 'k', 'not "json" {') RETURNING id`)
	good := insertCommitted(t, f.admin, `INSERT INTO `+f.name+`.outbox (aggregatetype, aggregateid, payload) VALUES ('orders', 'k', '{"a": [1, 2.50]}') RETURNING id`)

	recs := f.consume(t, f.topic("orders"), 2, 30*time.Second, 300*time.Millisecond)
	if len(recs) != 2 || recs[0].ID != bad.id || recs[1].ID != good.id {
		t.Fatalf("topic %s: ids %v, want %d then %d", f.topic("orders"), countIDs(recs), bad.id, good.id)
	}
	if got, want := string(recs[0].Value), `"not \"json\" {"`; got != want {
		t.Errorf("value of the non-JSON payload: %s, want the escaped string %s", got, want)
	}
	if got, want := string(recs[1].Value), `{"a":[1,2.50]}`; got != want {
		t.Errorf("value of the JSON payload: %s, want %s", got, want)
	}
	r.stop(t, 30*time.Second)

	const warning = `level=WARN msg="payload is not valid JSON; sending it as a JSON string"`
	var lines []string
	for _, line := range strings.Split(r.log(), "\n") {
		if strings.Contains(line, warning) {
			_, rest, _ := strings.Cut(line, " ") // the time
			lines = append(lines, rest)
		}
	}
	if len(lines) != 1 {
		t.Fatalf("%d warnings %q, want exactly one, for event id %d", len(lines), warning, bad.id)
	}
	lsn := messageLSN(t, lines[0], bad)
	want := fmt.Sprintf(`%s lsn=%s table=%s.outbox event_id=%d column=payload`, warning, lsn, f.name, bad.id)
	if lines[0] != want {
		t.Errorf("warning\n got: %s\nwant: %s", lines[0], want)
	}
	t.Logf("warning: %s", lines[0])
}

// bigPayloadSQL inserts a row routed to f.topic("big") whose jsonb payload
// is 1,100,000 bytes of text, over the default max.request.size (1 MiB).
func bigPayloadSQL(f *fixture) string {
	return `INSERT INTO ` + f.name + `.outbox (aggregatetype, aggregateid, payload) VALUES ('big', 'k', jsonb_build_object('s', repeat('x', 1100000))) RETURNING id`
}

var tooLargeSize = regexp.MustCompile(`max\.request\.size: (\d+) bytes`)

// tooLargeMessage is the error for the big row of bigPayloadSQL, with the
// size it names checked to be over 1 MiB.
func tooLargeMessage(t *testing.T, f *fixture, msg, lsn string, id int64) string {
	t.Helper()
	size := "<size>"
	if m := tooLargeSize.FindStringSubmatch(msg); m == nil {
		t.Errorf("the message names no size: %s", msg)
	} else if n, _ := strconv.Atoi(m[1]); n <= 1<<20 {
		t.Errorf("the message names %d bytes, not over max.request.size", n)
	} else {
		size = m[1]
	}
	return fmt.Sprintf(`sending event %d (LSN %s, table %s.outbox) to %s: record rejected: sink: event id "%d" to topic "%s": record larger than max.request.size: %s bytes serialized (at most), max.request.size is 1048576; raise max.request.size (and the topic's max.message.bytes) or send a smaller payload`,
		id, lsn, f.name, f.topic("big"), id, f.topic("big"), size)
}

// TestBadInputPayloadTooLarge: a payload over max.request.size stops the
// relay with an error naming the event id, the topic and max.request.size.
func TestBadInputPayloadTooLarge(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "toolarge")
	pc := stopsAtPoison(t, f, f.config(t, nil), true, bigPayloadSQL(f))
	wantExit(t, pc.code, pc.msg, 1, tooLargeMessage(t, f, pc.msg, pc.lsn, pc.poison.id))
}

// TestBadInputDeadLettered: with errors.tolerance=all and a dead-letter
// topic, a too-large row goes there without its value (the copy would be
// refused too) and a row with a NULL route value as a JSON object of its
// columns, each with the error headers and the exact exception class, and
// the relay goes on. Regression: the too-large record's class read
// "*fmt.wrapErrors" (the relay wraps the sink's error with two %w).
func TestBadInputDeadLettered(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "toolargedlq")
	relaxNulls(t, f)
	dlq := f.name + ".dlq"
	r := startRelay(t, f.config(t, map[string]string{
		"errors.tolerance":                  "all",
		"errors.deadletterqueue.topic.name": dlq,
	}))
	f.waitStreaming(t)
	first := insertCommitted(t, f.admin, goodRowSQL(f))
	big := insertCommitted(t, f.admin, bigPayloadSQL(f))
	null := insertCommitted(t, f.admin, `INSERT INTO `+f.name+`.outbox (aggregatetype, aggregateid, payload) VALUES (NULL, 'k', '{"n": 2}') RETURNING id`)
	last := insertCommitted(t, f.admin, goodRowSQL(f))

	recs := f.consume(t, f.topic("good"), 2, 30*time.Second, 300*time.Millisecond)
	if len(recs) != 2 || recs[0].ID != first.id || recs[1].ID != last.id {
		t.Errorf("topic %s: ids %v, want %d and %d around the dead-lettered rows", f.topic("good"), countIDs(recs), first.id, last.id)
	}
	// The dead-letter topic has one partition: the rows' order.
	msgs := testbed.Consume(t, dlq, nil, 2, 30*time.Second, 300*time.Millisecond)
	if len(msgs) != 2 {
		t.Fatalf("dead-letter topic %s: %d records, want 2", dlq, len(msgs))
	}
	m, n := msgs[0], msgs[1]
	if string(m.Key) != "k" {
		t.Errorf("too-large dead letter key %q, want the row's key \"k\"", m.Key)
	}
	if raw := fetchRaw(t, dlq); len(raw) != 2 {
		t.Errorf("dead-letter topic %s: %d records in a fetch, want 2", dlq, len(raw))
	} else if raw[0].value != nil {
		t.Errorf("too-large dead letter value %s; want a null value", showBytes(raw[0].value))
	}
	cause := headerValue(m.Headers, "__connect.errors.exception.message")
	lsn := messageLSN(t, cause, big)
	wantHeaders(t, "too-large dead letter", m.Headers, []header{
		{"id", strconv.FormatInt(big.id, 10)},
		{"__connect.errors.topic", f.topic("big")},
		{"__connect.errors.connector.name", f.name},
		{"__connect.errors.stage", "KAFKA_PRODUCE"},
		{"__connect.errors.exception.class.name", "sink.ErrRecordTooLarge"},
		{"__connect.errors.exception.message", tooLargeMessage(t, f, cause, lsn, big.id)},
		{"__outboxrelay.lsn", lsn},
		{"__outboxrelay.source.table", f.name + ".outbox"},
		{"__outboxrelay.event.id", strconv.FormatInt(big.id, 10)},
	})

	nullID := strconv.FormatInt(null.id, 10)
	if string(n.Key) != nullID {
		t.Errorf("NULL-route dead letter key %q, want the event id %s", n.Key, nullID)
	}
	if !strings.Contains(string(n.Value), `"aggregatetype":null`) || !strings.Contains(string(n.Value), `"id":"`+nullID+`"`) {
		t.Errorf("NULL-route dead letter value %s; want the row's columns", n.Value)
	}
	cause = headerValue(n.Headers, "__connect.errors.exception.message")
	lsn = messageLSN(t, cause, null)
	wantHeaders(t, "NULL-route dead letter", n.Headers, []header{
		{"__connect.errors.topic", ""},
		{"__connect.errors.connector.name", f.name},
		{"__connect.errors.stage", "TRANSFORMATION"},
		{"__connect.errors.exception.class.name", "*router.RowError"},
		{"__connect.errors.exception.message", fmt.Sprintf(`routing row at LSN %s of %s.outbox (event id %d): column "aggregatetype" (from transforms.outbox.route.by.field): the route value is NULL, so the row has no topic; give every outbox row a value in this column`,
			lsn, f.name, null.id)},
		{"__outboxrelay.lsn", lsn},
		{"__outboxrelay.source.table", f.name + ".outbox"},
		{"__outboxrelay.event.id", nullID},
	})
	r.stop(t, 30*time.Second)
}

// header is one expected record header.
type header struct{ key, want string }

// wantHeaders checks that hs holds each of want with its exact value.
func wantHeaders(t *testing.T, what string, hs []kafka.Header, want []header) {
	t.Helper()
	for _, h := range want {
		if got := headerValue(hs, h.key); got != h.want {
			t.Errorf("%s: header %s\n got: %s\nwant: %s", what, h.key, got, h.want)
		}
	}
}

// TestBadInputIllegalTopic: a route value that makes an illegal topic name
// (a space; 250 characters, one over Kafka's limit) stops the relay naming
// the row, the column and the options to change.
func TestBadInputIllegalTopic(t *testing.T) {
	t.Parallel()
	t.Run("space", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, "topicspace")
		pc := stopsAtPoison(t, f, f.config(t, nil), true,
			`INSERT INTO `+f.name+`.outbox (aggregatetype, aggregateid, payload) VALUES ('not a topic', 'k', '{}') RETURNING id`)
		topic := f.topic("not a topic")
		want := fmt.Sprintf(`routing row at LSN %s of %s.outbox (event id %d): column "aggregatetype" (from transforms.outbox.route.by.field): topic name %q has the byte ' ' at offset %d; legal characters are a-z, A-Z, 0-9, '.', '_' and '-'; change the row's value or transforms.outbox.route.topic.regex / transforms.outbox.route.topic.replacement so that every route gives a legal topic`,
			pc.lsn, f.name, pc.poison.id, topic, strings.IndexByte(topic, ' '))
		wantExit(t, pc.code, pc.msg, 1, want)
	})
	t.Run("250 characters", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, "topiclong")
		value := strings.Repeat("a", 250-len(f.name)-1) // the topic is f.name + "." + value
		topic := f.topic(value)
		pc := stopsAtPoison(t, f, f.config(t, nil), true,
			`INSERT INTO `+f.name+`.outbox (aggregatetype, aggregateid, payload) VALUES ($1, 'k', '{}') RETURNING id`, value)
		want := fmt.Sprintf(`routing row at LSN %s of %s.outbox (event id %d): column "aggregatetype" (from transforms.outbox.route.by.field): topic name %q… is 250 characters long, the limit is 249; change the row's value or transforms.outbox.route.topic.regex / transforms.outbox.route.topic.replacement so that every route gives a legal topic`,
			pc.lsn, f.name, pc.poison.id, topic[:40])
		wantExit(t, pc.code, pc.msg, 1, want)
	})
}

// TestBadInputMissingColumn: table.field.event.payload names a column the
// table lacks: the first row stops the relay naming the column and the key.
func TestBadInputMissingColumn(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "nocolumn")
	cfg := f.config(t, map[string]string{"transforms.outbox.table.field.event.payload": "body"})
	pc := stopsAtPoison(t, f, cfg, false, goodRowSQL(f))
	want := fmt.Sprintf(`routing row at LSN %s of %s.outbox (event id %d): column "body" (from transforms.outbox.table.field.event.payload): the row has no column "body"; add it to the table or set transforms.outbox.table.field.event.payload to the column that holds it`,
		pc.lsn, f.name, pc.poison.id)
	wantExit(t, pc.code, pc.msg, 1, want)
}

// TestBadInputPartitionNotInteger: a partition placement on a text column
// stops the relay at the first row, naming the column, the key and the
// column's type. The type is named, not only its OID: users do not know
// that OID 25 is text.
func TestBadInputPartitionNotInteger(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "partnotint")
	cfg := f.config(t, map[string]string{"transforms.outbox.table.fields.additional.placement": "type:partition"})
	pc := stopsAtPoison(t, f, cfg, false, goodRowSQL(f))
	want := fmt.Sprintf(`routing row at LSN %s of %s.outbox (event id %d): column "type" (from transforms.outbox.table.fields.additional.placement): a partition placement needs an integer column (smallint, integer or bigint); this one has type text (OID 25)`,
		pc.lsn, f.name, pc.poison.id)
	wantExit(t, pc.code, pc.msg, 1, want)
}

// TestBadInputWrongPassword: a wrong database.password stops the relay at
// once (no retrying), naming the keys to check and never the password.
func TestBadInputWrongPassword(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "password")
	const wrong = "not-the-password-7f3a"
	r := startRelay(t, f.config(t, map[string]string{"database.password": wrong}))
	code, msg := waitRelayExit(t, r, 30*time.Second)
	host, port := testbed.PostgresHostPort(t)
	want := fmt.Sprintf("connecting to %s:%d/order_db as debezium: failed to connect to `user=debezium database=order_db`: %s:%d (%s): failed SASL auth: FATAL: password authentication failed for user \"debezium\" (SQLSTATE 28P01); check database.user and database.password",
		host, port, host, port, host)
	wantExit(t, code, msg, 1, want)
	if strings.Contains(r.log(), wrong) {
		t.Errorf("the wrong password appears in the relay's output:\n%s", r.log())
	}
}

// TestBadInputMissingPublication: publication.autocreate.mode=disabled and
// no publication: the error gives the exact CREATE PUBLICATION to run.
func TestBadInputMissingPublication(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "nopub")
	testbed.Exec(t, f.admin, `DROP PUBLICATION `+f.name)
	r := startRelay(t, f.config(t, nil))
	code, msg := waitRelayExit(t, r, 30*time.Second)
	want := fmt.Sprintf(`preflight: publication missing or incomplete: publication %q does not exist and publication.autocreate.mode is disabled; run: CREATE PUBLICATION %s FOR TABLE %s.outbox;`,
		f.name, f.name, f.name)
	wantExit(t, code, msg, 1, want)
}

// holdSlot creates the fixture's slot and streams from it on a replication
// connection of the test's own, as another consumer (Debezium, a second
// relay) would; it returns that walsender's pid. The connection closes at
// the end of the test, before the fixture drops the slot.
func holdSlot(t *testing.T, f *fixture) uint32 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dsn := testbed.Postgres(t)
	if strings.Contains(dsn, "?") {
		dsn += "&replication=database"
	} else {
		dsn += "?replication=database"
	}
	conn, err := pgconn.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("opening a replication connection: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	slot, err := pglogrepl.CreateReplicationSlot(ctx, conn, f.name, "pgoutput", pglogrepl.CreateReplicationSlotOptions{Mode: pglogrepl.LogicalReplication})
	if err != nil {
		t.Fatalf("creating slot %s: %v", f.name, err)
	}
	start, err := pglogrepl.ParseLSN(slot.ConsistentPoint)
	if err != nil {
		t.Fatalf("slot %s consistent point %q: %v", f.name, slot.ConsistentPoint, err)
	}
	err = pglogrepl.StartReplication(ctx, conn, f.name, start, pglogrepl.StartReplicationOptions{
		Mode:       pglogrepl.LogicalReplication,
		PluginArgs: []string{"proto_version '1'", "publication_names '" + f.name + "'"},
	})
	if err != nil {
		t.Fatalf("START_REPLICATION on slot %s: %v", f.name, err)
	}
	return conn.PID()
}

// TestBadInputSlotHeld: another connection streams from the slot. The
// relay waits for it to be released (its own previous walsender may still
// be exiting) slot.max.retries times, slot.retry.delay.ms apart, as
// Debezium does, and then stops naming the pid and the pg_terminate_backend
// that ends it.
func TestBadInputSlotHeld(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "slotheld")
	pid := holdSlot(t, f)
	started := time.Now()
	r := startRelay(t, f.config(t, map[string]string{"slot.max.retries": "3", "slot.retry.delay.ms": "500"}))
	code, msg := waitRelayExit(t, r, 60*time.Second)
	took := time.Since(started)
	want := fmt.Sprintf(`preflight: replication slot is held by another connection: slot %q is active on backend pid %d: stop the other consumer (another outboxrelay or Debezium), or end it with SELECT pg_terminate_backend(%d);`,
		f.name, pid, pid)
	wantExit(t, code, msg, 1, want)
	t.Logf("the relay gave up after %s", took.Round(100*time.Millisecond))
	if took < 1500*time.Millisecond || took > 20*time.Second {
		t.Errorf("the relay gave up after %s; want about 3 retries 500 ms apart", took)
	}
	if !strings.Contains(r.log(), "slot still active, waiting for it to be released") {
		t.Errorf("the relay did not log that it waits for the slot")
	}
}

// TestBadInputWALLevel: a server with wal_level=replica. The shared bed
// cannot change it, so the test starts a private throwaway cluster (about
// 1.5 s: initdb, pg_ctl start) and points the relay at it.
func TestBadInputWALLevel(t *testing.T) {
	t.Parallel()
	testbed.KafkaBrokers(t)
	port := testbed.StartPrivateCluster(t, "wal_level = replica").Port
	f := &fixture{name: fmt.Sprintf("e2e_wallevel_%d_%d", time.Now().UnixNano()%1e12, nameSeq.Add(1))}
	r := startRelay(t, f.config(t, map[string]string{
		"database.hostname": "127.0.0.1",
		"database.port":     strconv.Itoa(port),
		"database.user":     "postgres",
		"database.dbname":   "postgres",
	}))
	code, msg := waitRelayExit(t, r, 30*time.Second)
	wantExit(t, code, msg, 1, `preflight: wal_level is not logical: wal_level is "replica"; run ALTER SYSTEM SET wal_level = logical; and restart PostgreSQL`)
}

// TestBadInputPluginDecoderbufs: plugin.name=decoderbufs (Debezium's
// default) is a config error, exit code 2, saying what to write instead.
func TestBadInputPluginDecoderbufs(t *testing.T) {
	t.Parallel()
	testbed.KafkaBrokers(t)
	f := &fixture{name: fmt.Sprintf("e2e_decoderbufs_%d_%d", time.Now().UnixNano()%1e12, nameSeq.Add(1))}
	cfg := f.config(t, map[string]string{"plugin.name": "decoderbufs"})
	r := startRelay(t, cfg)
	code, msg := waitRelayExit(t, r, 30*time.Second)
	wantExit(t, code, msg, 2, "loading "+cfg+": plugin.name: \"decoderbufs\" is not supported: outboxrelay decodes only pgoutput; set plugin.name=pgoutput (PostgreSQL 10+ built-in)")
}

// rawRecord is a record as the broker stores it: a nil key or value is a
// null one, an empty non-nil one an empty byte string.
type rawRecord struct {
	key, value []byte
	headers    []kafka.Header
}

// fetchRaw reads partition 0 of topic from its first offset with one Fetch
// request. kafka-go's Reader and Conn return nil for both a null and an
// empty key; the protocol-level Fetch tells them apart.
func fetchRaw(t *testing.T, topic string) []rawRecord {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A transport of its own: the shared default one caches metadata from
	// before the relay created the topic and answers "topic not found".
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	client := &kafka.Client{Addr: kafka.TCP(testbed.KafkaBrokers(t)), Timeout: 30 * time.Second, Transport: tr}
	res, err := client.Fetch(ctx, &kafka.FetchRequest{Topic: topic, Partition: 0, Offset: kafka.FirstOffset, MinBytes: 1, MaxBytes: 16 << 20, MaxWait: time.Second})
	if err == nil {
		err = res.Error
	}
	if err != nil {
		t.Fatalf("fetching %s/0: %v", topic, err)
	}
	var out []rawRecord
	for {
		r, err := res.Records.ReadRecord()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("reading records of %s/0: %v", topic, err)
		}
		out = append(out, rawRecord{key: readBytes(t, r.Key), value: readBytes(t, r.Value), headers: r.Headers})
	}
}

func readBytes(t *testing.T, b kafka.Bytes) []byte {
	t.Helper()
	if b == nil {
		return nil
	}
	out, err := io.ReadAll(b)
	if err != nil {
		t.Fatalf("reading record bytes: %v", err)
	}
	if out == nil {
		out = []byte{}
	}
	return out
}

// showBytes prints a key or value, telling null from empty.
func showBytes(b []byte) string {
	if b == nil {
		return "null"
	}
	return strconv.Quote(string(b))
}

func headerValue(hs []kafka.Header, key string) string {
	for _, h := range hs {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}
