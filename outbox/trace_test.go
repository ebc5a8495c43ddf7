package outbox_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/trace"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
	"github.com/outboxrelay/outboxrelay/outbox"
)

// spanCtx is a context holding a sampled span context with a tracestate
// whose '=' Properties.store escapes.
func spanCtx(t testing.TB) context.Context {
	t.Helper()
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ts, err := trace.ParseTraceState("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE")
	if err != nil {
		t.Fatal(err)
	}
	return trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, TraceState: ts}))
}

const (
	wantW3C   = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	wantProps = "traceparent=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\ntracestate=rojo\\=00f067aa0ba902b7,congo\\=t61rcWkgMzE\n"
)

func TestSpanContext(t *testing.T) {
	if got := outbox.SpanContext(spanCtx(t), outbox.SpanContextW3C); got != wantW3C {
		t.Errorf("W3C: %q, want %q", got, wantW3C)
	}
	if got := outbox.SpanContext(spanCtx(t), outbox.SpanContextProperties); got != wantProps {
		t.Errorf("Properties: %q, want %q", got, wantProps)
	}
	if got := outbox.SpanContext(context.Background(), outbox.SpanContextProperties); got != "" {
		t.Errorf("no span: %q, want empty", got)
	}
}

// With a context that holds a span, Write fills the span-context column
// through pgx and database/sql, in either format; an Event.Columns value
// wins; a table without the column is written without it.
func TestWriteSpanContext(t *testing.T) {
	conn := testbed.Admin(t)
	db, err := sql.Open("pgx", testbed.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s := schema(t, conn, `CREATE TABLE $S.outbox (id uuid PRIMARY KEY, aggregatetype text NOT NULL, aggregateid text NOT NULL, payload jsonb, tracingspancontext text)`,
		`CREATE TABLE $S.plain (id uuid PRIMARY KEY, aggregatetype text NOT NULL, aggregateid text NOT NULL, payload jsonb)`)
	ctx := spanCtx(t)
	write := map[string]func(w *outbox.Writer, ev outbox.Event) error{
		"pgx": func(w *outbox.Writer, ev outbox.Event) error {
			return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error { return w.Write(ctx, tx, ev) })
		},
		"database/sql": func(w *outbox.Writer, ev outbox.Event) error {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			defer tx.Rollback()
			if err := w.WriteSQL(ctx, tx, ev); err != nil {
				return err
			}
			return tx.Commit()
		},
	}
	build := map[string]func(o outbox.Options) (*outbox.Writer, error){
		"pgx":          func(o outbox.Options) (*outbox.Writer, error) { return outbox.New(ctx, conn, o) },
		"database/sql": func(o outbox.Options) (*outbox.Writer, error) { return outbox.NewSQL(ctx, db, o) },
	}
	n := 0
	for name, wr := range write {
		for _, tc := range []struct {
			format  outbox.SpanContextFormat
			columns map[string]any
			want    string
		}{
			{outbox.SpanContextProperties, nil, wantProps},
			{outbox.SpanContextW3C, nil, wantW3C},
			{outbox.SpanContextW3C, map[string]any{"tracingspancontext": "mine"}, "mine"},
		} {
			w, err := build[name](outbox.Options{Table: s + ".outbox", SpanContextFormat: tc.format})
			if err != nil {
				t.Fatal(err)
			}
			n++
			id := fmt.Sprintf("0190b1a8-4c1e-7000-8000-%012d", n)
			if err := wr(w, outbox.Event{ID: id, AggregateType: "order", AggregateID: "a", Payload: 1, Columns: tc.columns}); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			var got string
			if err := conn.QueryRow(context.Background(), `SELECT tracingspancontext FROM `+s+`.outbox WHERE id = $1`, id).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("%s, format %d: column %q, want %q", name, tc.format, got, tc.want)
			}
		}
		w, err := build[name](outbox.Options{Table: s + ".plain"})
		if err != nil {
			t.Fatal(err)
		}
		n++
		if err := wr(w, outbox.Event{ID: fmt.Sprintf("0190b1a8-4c1e-7000-8000-%012d", n), AggregateType: "order", AggregateID: "a", Payload: 1}); err != nil {
			t.Errorf("%s: a table without the column: %v", name, err)
		}
	}
}

// The Emitter puts the span context in the message's content, as the
// span-context member the relay reads.
func TestEmitSpanContext(t *testing.T) {
	conn := testbed.Admin(t)
	e, err := outbox.NewEmitter(outbox.Options{MessagePrefix: "trace-test", SpanContextFormat: outbox.SpanContextW3C})
	if err != nil {
		t.Fatal(err)
	}
	testbed.Exec(t, conn, `SELECT pg_create_logical_replication_slot('outbox_trace_test', 'test_decoding', true)`)
	ctx := spanCtx(t)
	if err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		return e.Emit(ctx, tx, outbox.Event{ID: "e1", AggregateType: "order", AggregateID: "a", Payload: 1})
	}); err != nil {
		t.Fatal(err)
	}
	var data string
	if err := conn.QueryRow(context.Background(), `SELECT substring(data from '{.*}') FROM pg_logical_slot_get_changes('outbox_trace_test', NULL, NULL, 'include-xids', '0')
		WHERE data LIKE 'message:%'`).Scan(&data); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(data), &m); err != nil {
		t.Fatalf("%v: %s", err, data)
	}
	if m["tracingspancontext"] != wantW3C {
		t.Errorf("message content %s; want tracingspancontext %q", data, wantW3C)
	}
}
