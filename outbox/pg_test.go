package outbox_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
	"github.com/outboxrelay/outboxrelay/outbox"
)

// driver runs the same test through pgx and through database/sql.
type driver struct {
	name string
	// writer builds a Writer through this driver.
	writer func(t *testing.T, opts outbox.Options) (*outbox.Writer, error)
	// inTx runs fn in a transaction and commits when fn returns nil.
	inTx func(t *testing.T, w *outbox.Writer, fn func(write func(...outbox.Event) error) error) error
}

func drivers(t *testing.T) []driver {
	t.Helper()
	url := testbed.Postgres(t)
	ctx := context.Background()
	conn := testbed.Admin(t)
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return []driver{{
		name:   "pgx",
		writer: func(t *testing.T, o outbox.Options) (*outbox.Writer, error) { return outbox.New(ctx, conn, o) },
		inTx: func(t *testing.T, w *outbox.Writer, fn func(write func(...outbox.Event) error) error) error {
			return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
				return fn(func(ev ...outbox.Event) error { return w.Write(ctx, tx, ev...) })
			})
		},
	}, {
		name:   "database/sql",
		writer: func(t *testing.T, o outbox.Options) (*outbox.Writer, error) { return outbox.NewSQL(ctx, db, o) },
		inTx: func(t *testing.T, w *outbox.Writer, fn func(write func(...outbox.Event) error) error) error {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			defer tx.Rollback()
			if err := fn(func(ev ...outbox.Event) error { return w.WriteSQL(ctx, tx, ev...) }); err != nil {
				return err
			}
			return tx.Commit()
		},
	}}
}

// schema creates a private schema with the given tables and drops it at
// the end of the test.
func schema(t *testing.T, conn *pgx.Conn, ddl ...string) string {
	t.Helper()
	name := fmt.Sprintf("outbox_test_%d", time.Now().UnixNano()%1e12)
	testbed.Exec(t, conn, `CREATE SCHEMA `+name, `SET search_path TO `+name)
	for _, d := range ddl {
		testbed.Exec(t, conn, strings.ReplaceAll(d, "$S", name))
	}
	testbed.Exec(t, conn, `RESET search_path`)
	t.Cleanup(func() { _, _ = conn.Exec(context.Background(), `DROP SCHEMA `+name+` CASCADE`) })
	return name
}

const debeziumTable = `CREATE TABLE $S.outbox (
	id uuid PRIMARY KEY,
	aggregatetype text NOT NULL,
	aggregateid text NOT NULL,
	payload jsonb,
	event_type text NOT NULL DEFAULT 'created',
	tenant int,
	written timestamptz GENERATED ALWAYS AS ('2000-01-01'::timestamptz) STORED)`

type row struct {
	id, aggType, aggID, payload, eventType string
	tenant                                 *int
}

func readRows(t *testing.T, conn *pgx.Conn, table string) []row {
	t.Helper()
	rows, err := conn.Query(context.Background(), `SELECT id::text, aggregatetype, aggregateid, coalesce(payload::text, 'NULL'), event_type, tenant FROM `+table+` ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	var out []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.id, &r.aggType, &r.aggID, &r.payload, &r.eventType, &r.tenant); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	return out
}

type orderPlaced struct {
	OrderID    string `json:"order_id"`
	TotalCents int    `json:"total_cents"`
}

func TestWrite(t *testing.T) {
	conn := testbed.Admin(t)
	for _, d := range drivers(t) {
		t.Run(d.name, func(t *testing.T) {
			s := schema(t, conn, debeziumTable)
			w, err := d.writer(t, outbox.Options{Table: s + ".outbox"})
			if err != nil {
				t.Fatal(err)
			}
			err = d.inTx(t, w, func(write func(...outbox.Event) error) error {
				if err := write(outbox.Event{AggregateType: "orders", AggregateID: "o-1", Payload: orderPlaced{"o-1", 1999}}); err != nil {
					return err
				}
				// Two more in one statement: raw bytes kept as written, a
				// given id, an extra column, a NULL payload.
				return write(
					outbox.Event{ID: "01892a4b-5c6d-7abc-8def-0123456789ab", AggregateType: "orders", AggregateID: "o-2",
						Payload: json.RawMessage(`{"b": 2, "a": 1}`), Columns: map[string]any{"event_type": "paid", "tenant": 7}},
					outbox.Event{AggregateType: "payments", AggregateID: "p-1", Payload: nil},
				)
			})
			if err != nil {
				t.Fatal(err)
			}
			got := readRows(t, conn, s+".outbox")
			if len(got) != 3 {
				t.Fatalf("%d rows, want 3: %+v", len(got), got)
			}
			byKey := map[string]row{}
			for _, r := range got {
				byKey[r.aggID] = r
			}
			if r := byKey["o-1"]; r.aggType != "orders" || r.payload != `{"order_id": "o-1", "total_cents": 1999}` || r.eventType != "created" || r.tenant != nil || r.id[14] != '7' {
				t.Errorf("marshalled event: %+v (want a generated UUIDv7, the DEFAULT event_type, the JSON of the value)", r)
			}
			if r := byKey["o-2"]; r.id != "01892a4b-5c6d-7abc-8def-0123456789ab" || r.payload != `{"a": 1, "b": 2}` || r.eventType != "paid" || r.tenant == nil || *r.tenant != 7 {
				t.Errorf("event with id and columns: %+v", r)
			}
			if r := byKey["p-1"]; r.aggType != "payments" || r.payload != "NULL" {
				t.Errorf("event without payload: %+v", r)
			}
		})
	}
}

// TestArticleTable writes into the polling article's events_outbox, whose
// id is a bigserial: the table's DEFAULT makes the ids.
func TestArticleTable(t *testing.T) {
	conn := testbed.Admin(t)
	for _, d := range drivers(t) {
		t.Run(d.name, func(t *testing.T) {
			s := schema(t, conn, `CREATE TABLE $S.events_outbox (id BIGSERIAL PRIMARY KEY, aggregate_id UUID NOT NULL, type TEXT NOT NULL,
				payload JSONB NOT NULL, created_at TIMESTAMPTZ NOT NULL DEFAULT now(), dispatched_at TIMESTAMPTZ)`)
			opts, err := outbox.LoadOptions("../testdata/article/connector.json")
			if err != nil {
				t.Fatal(err)
			}
			opts.Table = s + ".events_outbox"
			w, err := d.writer(t, opts)
			if err != nil {
				t.Fatal(err)
			}
			agg := outbox.NewID()
			err = d.inTx(t, w, func(write func(...outbox.Event) error) error {
				return write(outbox.Event{AggregateType: "order.placed", AggregateID: agg, Payload: orderPlaced{agg, 500}},
					outbox.Event{AggregateType: "order.paid", AggregateID: agg, Payload: orderPlaced{agg, 500}})
			})
			if err != nil {
				t.Fatal(err)
			}
			var ids []int64
			rows, _ := conn.Query(context.Background(), `SELECT id FROM `+s+`.events_outbox WHERE aggregate_id = $1 ORDER BY id`, agg)
			ids, err = pgx.CollectRows(rows, pgx.RowTo[int64])
			if err != nil || len(ids) != 2 || ids[1] != ids[0]+1 {
				t.Fatalf("ids %v, %v; want two consecutive bigserial ids", ids, err)
			}
		})
	}
}

// TestBadInput checks that each bad input is refused before anything is
// sent: the error names the column, and the transaction goes on to commit
// a good event.
func TestBadInput(t *testing.T) {
	conn := testbed.Admin(t)
	tests := []struct {
		name   string
		ev     outbox.Event
		column string
		want   string
	}{
		{"payload not JSON for jsonb", outbox.Event{AggregateType: "orders", AggregateID: "k", Payload: []byte("not json")}, "payload", "not valid JSON"},
		{"payload not marshallable", outbox.Event{AggregateType: "orders", AggregateID: "k", Payload: func() {}}, "payload", "marshalling"},
		{"NULL route value", outbox.Event{AggregateType: "", AggregateID: "k", Payload: 1}, "aggregatetype", "route value"},
		{"route gives an illegal topic", outbox.Event{AggregateType: "no spaces", AggregateID: "k", Payload: 1}, "aggregatetype", "legal topic"},
		{"NULL in a NOT NULL column", outbox.Event{AggregateType: "orders", Payload: 1}, "aggregateid", "NOT NULL"},
		{"NULL for a NOT NULL extra column", outbox.Event{AggregateType: "orders", AggregateID: "k", Payload: 1, Columns: map[string]any{"event_type": nil}}, "event_type", "NOT NULL"},
		{"missing column", outbox.Event{AggregateType: "orders", AggregateID: "k", Payload: 1, Columns: map[string]any{"eventtype": "x"}}, "eventtype", "does not have"},
		{"generated column", outbox.Event{AggregateType: "orders", AggregateID: "k", Payload: 1, Columns: map[string]any{"written": "x"}}, "written", "GENERATED"},
		{"id not a uuid", outbox.Event{ID: "42", AggregateType: "orders", AggregateID: "k", Payload: 1}, "id", "not a UUID"},
	}
	for _, d := range drivers(t) {
		t.Run(d.name, func(t *testing.T) {
			s := schema(t, conn, debeziumTable)
			w, err := d.writer(t, outbox.Options{Table: s + ".outbox"})
			if err != nil {
				t.Fatal(err)
			}
			for _, tt := range tests {
				err := d.inTx(t, w, func(write func(...outbox.Event) error) error {
					werr := write(outbox.Event{AggregateType: "orders", AggregateID: "good", Payload: 1}, tt.ev)
					checkColumnError(t, tt.name, werr, tt.column, tt.want)
					// The transaction is intact: a good event commits.
					return write(outbox.Event{AggregateType: "orders", AggregateID: "good", Payload: 1})
				})
				if err != nil {
					t.Errorf("%s: the transaction did not survive the refused event: %v", tt.name, err)
				}
			}
			if got := len(readRows(t, conn, s+".outbox")); got != len(tests) {
				t.Errorf("%d rows, want %d (one good event per case, no bad one)", got, len(tests))
			}
			// A column the options name but the table lacks: New refuses it.
			_, err = d.writer(t, outbox.Options{Table: s + ".outbox", PayloadColumn: "body"})
			checkColumnError(t, "missing payload column", err, "body", "table.field.event.payload")
			_, err = d.writer(t, outbox.Options{Table: s + ".nosuch"})
			if err == nil || !strings.Contains(err.Error(), s+".nosuch does not exist") {
				t.Errorf("missing table: err %v", err)
			}
		})
	}
}

func checkColumnError(t *testing.T, name string, err error, column, want string) {
	t.Helper()
	var ce *outbox.ColumnError
	if !errors.As(err, &ce) {
		t.Errorf("%s: err %v, want a *outbox.ColumnError", name, err)
		return
	}
	if ce.Column != column || !strings.Contains(err.Error(), `column "`+column+`"`) || !strings.Contains(err.Error(), want) {
		t.Errorf("%s: err %q (column %q), want one naming column %q and saying %q", name, err, ce.Column, column, want)
	}
}

// TestExamples runs the examples that need PostgreSQL.
func TestExamples(t *testing.T) {
	got := testbed.RunExample(t, Example)
	want := `1 order.placed {"order_id": "0190b1a8-4c1e-7000-8000-000000000001", "customer_id": "0190b1a8-4c1e-7000-8000-0000000000c1", "total_cents": 4200}` + "\n"
	if got != want {
		t.Errorf("Example printed\n%s\nwant\n%s", got, want)
	}
	got = testbed.RunExample(t, ExampleEmitter)
	want = `message: transactional: 1 prefix: orders-service, sz: 277 content:{"id":"0190b1a8-4c1e-7000-8000-0000000000e1","aggregatetype":"order","aggregateid":"0190b1a8-4c1e-7000-8000-000000000001","payload":{"order_id":"0190b1a8-4c1e-7000-8000-000000000001","customer_id":"0190b1a8-4c1e-7000-8000-0000000000c1","total_cents":4200},"type":"OrderPlaced"}` + "\n"
	if got != want {
		t.Errorf("ExampleEmitter printed\n%s\nwant\n%s", got, want)
	}
}
