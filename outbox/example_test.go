package outbox_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/trace"

	"github.com/outboxrelay/outboxrelay/outbox"
)

// OrderPlaced is the event's payload: everything a consumer needs, so it
// never calls back for the order's current state.
type OrderPlaced struct {
	OrderID    string `json:"order_id"`
	CustomerID string `json:"customer_id"`
	TotalCents int    `json:"total_cents"`
}

// The whole producer side: one transaction writes the order and its event,
// so the event exists exactly when the order does. The table is the
// polling article's events_outbox; its names come from the connector JSON
// outboxrelay runs with. (TestExamples runs this against the test bed, with
// DATABASE_URL set.)
func Example() {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, ddl := range []string{
		`DROP SCHEMA IF EXISTS example_outbox CASCADE`,
		`CREATE SCHEMA example_outbox`,
		`CREATE TABLE example_outbox.orders (id uuid PRIMARY KEY, customer_id uuid NOT NULL, total_cents int NOT NULL)`,
		`CREATE TABLE example_outbox.events_outbox (id bigserial PRIMARY KEY, aggregate_id uuid NOT NULL, type text NOT NULL,
			payload jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now(), dispatched_at timestamptz)`,
	} {
		if _, err := conn.Exec(ctx, ddl); err != nil {
			log.Fatal(err)
		}
	}

	// Once, at start-up: the relay's connector JSON names table and columns.
	opts, err := outbox.LoadOptions("../testdata/article/connector.json")
	if err != nil {
		log.Fatal(err)
	}
	opts.Table = "example_outbox.events_outbox" // this example's own schema
	w, err := outbox.New(ctx, conn, opts)
	if err != nil {
		log.Fatal(err)
	}

	// Per order: the business row and the event in one transaction.
	order := OrderPlaced{OrderID: "0190b1a8-4c1e-7000-8000-000000000001", CustomerID: "0190b1a8-4c1e-7000-8000-0000000000c1", TotalCents: 4200}
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO example_outbox.orders VALUES ($1, $2, $3)`, order.OrderID, order.CustomerID, order.TotalCents); err != nil {
			return err // the event is rolled back with the order
		}
		return w.Write(ctx, tx, outbox.Event{
			AggregateType: "order.placed", // topic "order"
			AggregateID:   order.OrderID,  // record key
			Payload:       order,          // marshalled now, relayed as is
		})
	})
	if err != nil {
		log.Fatal(err)
	}

	var id int64
	var typ, payload string
	if err := conn.QueryRow(ctx, `SELECT id, type, payload::text FROM example_outbox.events_outbox`).Scan(&id, &typ, &payload); err != nil {
		log.Fatal(err)
	}
	fmt.Println(id, typ, payload)
	_, _ = conn.Exec(ctx, `DROP SCHEMA example_outbox CASCADE`)
}

// The connector JSON the relay reads gives the producer its names.
func ExampleParseOptions() {
	opts, err := outbox.LoadOptions("../testdata/article/connector.json")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("table:", opts.Table)
	fmt.Println("id:", opts.IDColumn, "key:", opts.KeyColumn, "route:", opts.RouteColumn, "payload:", opts.PayloadColumn)
	// Output:
	// table: public.events_outbox
	// id: id key: aggregate_id route: type payload: payload
}

// An outbox without a table: the event is a logical decoding message
// emitted in the order's transaction, with the same names as a table
// write. The relay routes it when its connector JSON chains
// DecodeLogicalDecodingMessageContent before the EventRouter. (Here a
// temporary test_decoding slot shows what the WAL carries; TestExamples
// runs this against the test bed, with DATABASE_URL set.)
func ExampleEmitter() {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `SELECT pg_create_logical_replication_slot('example_emitter', 'test_decoding', true)`); err != nil {
		log.Fatal(err)
	}

	e, err := outbox.NewEmitter(outbox.Options{MessagePrefix: "orders-service"})
	if err != nil {
		log.Fatal(err)
	}
	order := OrderPlaced{OrderID: "0190b1a8-4c1e-7000-8000-000000000001", CustomerID: "0190b1a8-4c1e-7000-8000-0000000000c1", TotalCents: 4200}
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		// … the business write, then the event, in one transaction:
		return e.Emit(ctx, tx, outbox.Event{
			ID:            "0190b1a8-4c1e-7000-8000-0000000000e1",
			AggregateType: "order",
			AggregateID:   order.OrderID,
			Payload:       order,
			Columns:       map[string]any{"type": "OrderPlaced"},
		})
	})
	if err != nil {
		log.Fatal(err)
	}

	var change string
	if err := conn.QueryRow(ctx, `SELECT data FROM pg_logical_slot_get_changes('example_emitter', NULL, NULL, 'include-xids', '0')
		WHERE data LIKE 'message:%'`).Scan(&change); err != nil {
		log.Fatal(err)
	}
	fmt.Println(change)
}

// The span context a Write puts in the span-context column: the relay
// continues the trace from it (docs/tracing.md). Here the context holds a
// span context built by hand; in a service it is the request's span
// (an OpenTelemetry SDK's tracer.Start).
func ExampleSpanContext() {
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ctx := trace.ContextWithSpanContext(context.Background(),
		trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}))
	fmt.Printf("%q\n", outbox.SpanContext(ctx, outbox.SpanContextProperties))
	fmt.Printf("%q\n", outbox.SpanContext(ctx, outbox.SpanContextW3C))
	// Output:
	// "traceparent=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\n"
	// "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
}
