package consumer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/segmentio/kafka-go"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/outboxrelay/outboxrelay/consumer"
)

// OrderPlaced is the payload the producer wrote into the outbox.
type OrderPlaced struct {
	OrderID    string `json:"order_id"`
	CustomerID string `json:"customer_id"`
	TotalCents int    `json:"total_cents"`
}

// A loyalty-points consumer: each order's points are added once, although
// the event arrives twice (as after a relay restart). (TestExamples runs
// this against the test bed, with DATABASE_URL and KAFKA_BROKERS set.)
func Example() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	for _, ddl := range []string{
		`DROP SCHEMA IF EXISTS example_consumer CASCADE`,
		`CREATE SCHEMA example_consumer`,
		// sql/processed_events.sql, in this example's schema.
		`CREATE TABLE example_consumer.processed_events (consumer text NOT NULL, event_id text NOT NULL,
			processed_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (consumer, event_id))`,
		`CREATE TABLE example_consumer.loyalty_points (customer_id text PRIMARY KEY, points bigint NOT NULL)`,
	} {
		if _, err := pool.Exec(ctx, ddl); err != nil {
			log.Fatal(err)
		}
	}
	brokers := os.Getenv("KAFKA_BROKERS")
	topic := fmt.Sprintf("example-orders-%d", time.Now().UnixNano())
	publishTwice(brokers, topic, `{"order_id":"o-1","customer_id":"c-7","total_cents":4250}`)

	runCtx, stop := context.WithCancel(ctx)
	handled := 0
	c, err := consumer.New(consumer.Config{
		Name:           topic, // the consumer group; usually fixed, e.g. "loyalty-points"
		Brokers:        []string{brokers},
		Topics:         []string{topic},
		ProcessedTable: "example_consumer.processed_events",
		AfterCommit: func(m consumer.Message, applied bool) {
			if handled++; handled == 2 {
				stop() // this example stops after both deliveries
			}
		},
	}, pool, func(ctx context.Context, tx pgx.Tx, m consumer.Message) error {
		var o OrderPlaced
		if err := json.Unmarshal(m.Value, &o); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO example_consumer.loyalty_points VALUES ($1, $2)
			ON CONFLICT (customer_id) DO UPDATE SET points = loyalty_points.points + EXCLUDED.points`,
			o.CustomerID, o.TotalCents/100)
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := c.Run(runCtx); err != nil { // returns nil after stop()
		log.Fatal(err)
	}

	var points int
	if err := pool.QueryRow(ctx, `SELECT points FROM example_consumer.loyalty_points WHERE customer_id = 'c-7'`).Scan(&points); err != nil {
		log.Fatal(err)
	}
	s := c.Stats()
	fmt.Printf("points %d, applied %d, duplicates %d\n", points, s.Applied, s.Duplicates)
	_, _ = pool.Exec(ctx, `DROP SCHEMA example_consumer CASCADE`)
	deleteExampleTopic(brokers, topic)
}

// publishTwice stands in for the relay: it creates the topic and sends one
// event twice, with its id in the "id" header (and the extra headers).
func publishTwice(brokers, topic, payload string, extra ...kafka.Header) {
	conn, err := kafka.Dial("tcp", brokers)
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	ctrl, err := conn.Controller()
	if err != nil {
		log.Fatal(err)
	}
	cc, err := kafka.Dial("tcp", net.JoinHostPort(ctrl.Host, strconv.Itoa(ctrl.Port)))
	if err != nil {
		log.Fatal(err)
	}
	defer cc.Close()
	if err := cc.CreateTopics(kafka.TopicConfig{Topic: topic, NumPartitions: 1, ReplicationFactor: 1}); err != nil {
		log.Fatal(err)
	}
	w := &kafka.Writer{Addr: kafka.TCP(brokers), Topic: topic, Transport: &kafka.Transport{}, RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond}
	defer w.Close()
	msg := kafka.Message{Key: []byte("o-1"), Value: []byte(payload), Headers: append([]kafka.Header{{Key: "id", Value: []byte("0190b1a8-4c1e-7000-8000-0000000000e1")}}, extra...)}
	for attempt := 0; ; attempt++ { // the new topic's leader may take a moment
		err = w.WriteMessages(context.Background(), msg, msg)
		if err == nil || attempt == 50 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		log.Fatal(err)
	}
}

func deleteExampleTopic(brokers, topic string) {
	client := &kafka.Client{Addr: kafka.TCP(brokers), Timeout: 10 * time.Second}
	_, _ = client.DeleteTopics(context.Background(), &kafka.DeleteTopicsRequest{Topics: []string{topic}})
}

// The defaults a Config gets.
func ExampleConfig_Validate() {
	cfg := consumer.Config{Name: "loyalty-points", Brokers: []string{"kafka:9092"}, Topics: []string{"orders"}}
	if err := cfg.Validate(); err != nil {
		log.Fatal(err)
	}
	fmt.Println("id header:", cfg.IDHeader)
	fmt.Println("table:", cfg.ProcessedTable)
	fmt.Println("attempts:", cfg.MaxAttempts, "backoff:", cfg.Backoff, "to", cfg.MaxBackoff)
	// Output:
	// id header: id
	// table: processed_events
	// attempts: 5 backoff: 100ms to 5s
}

// The consumer continues the trace of the request that wrote the event:
// with a TracerProvider each message is handled in a span whose parent is
// the context in its traceparent header (the relay's publish span), and
// the handler's ctx holds it. The duplicate's span says it was skipped.
// (TestExamples runs this against the test bed.)
func Example_tracing() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	for _, ddl := range []string{
		`DROP SCHEMA IF EXISTS example_tracing CASCADE`,
		`CREATE SCHEMA example_tracing`,
		`CREATE TABLE example_tracing.processed_events (consumer text NOT NULL, event_id text NOT NULL,
			processed_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (consumer, event_id))`,
	} {
		if _, err := pool.Exec(ctx, ddl); err != nil {
			log.Fatal(err)
		}
	}
	brokers := os.Getenv("KAFKA_BROKERS")
	topic := fmt.Sprintf("example-traced-%d", time.Now().UnixNano())
	publishTwice(brokers, topic, `{"order_id":"o-1"}`,
		kafka.Header{Key: "traceparent", Value: []byte("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")})

	// In a service: the SDK's provider with an OTLP exporter. Here spans
	// are kept in memory to print them.
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	defer tp.Shutdown(ctx) //nolint:errcheck

	runCtx, stop := context.WithCancel(ctx)
	handled := 0
	c, err := consumer.New(consumer.Config{
		Name: topic, Brokers: []string{brokers}, Topics: []string{topic},
		ProcessedTable: "example_tracing.processed_events",
		TracerProvider: tp,
		AfterCommit: func(consumer.Message, bool) {
			if handled++; handled == 2 {
				stop()
			}
		},
	}, pool, func(ctx context.Context, tx pgx.Tx, m consumer.Message) error {
		// ctx holds the message's span: spans started from it are its
		// children.
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := c.Run(runCtx); err != nil {
		log.Fatal(err)
	}
	for _, s := range spans.GetSpans() {
		dup := false
		for _, a := range s.Attributes {
			if a.Key == consumer.AttrDuplicate {
				dup = a.Value.AsBool()
			}
		}
		fmt.Printf("trace %s, parent %s, duplicate %v\n", s.SpanContext.TraceID(), s.Parent.SpanID(), dup)
	}
	_, _ = pool.Exec(ctx, `DROP SCHEMA example_tracing CASCADE`)
	deleteExampleTopic(brokers, topic)
}
