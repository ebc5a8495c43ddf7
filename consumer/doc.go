// Package consumer is the consumer side of the transactional outbox: a
// Kafka consumer-group loop that applies each event's side effect exactly
// once, although outboxrelay (like any relay) delivers at least once.
//
// For every message, in one PostgreSQL transaction, the Consumer
//
//  1. inserts (Config.Name, event id) into processed_events; when the row
//     is already there the event was applied before, and the handler is
//     skipped;
//  2. runs the Handler with that same transaction, so the side effect and
//     the record of it commit or roll back together;
//  3. commits the transaction, and only then
//  4. commits the message's Kafka offset.
//
// A crash anywhere leaves one of two states: the transaction did not
// commit (nothing applied, the message comes again and is applied then),
// or it did (the message may come again, finds its processed_events row
// and is skipped). Never both halves of a side effect, never one twice.
// The two mistakes this order avoids: recording the event in one
// transaction and applying it in another (a crash between them loses the
// effect, or applies it twice), and committing the offset before the
// side effect (a crash loses the event).
//
// # Usage
//
// Create the table once (outboxrelay sql prints sql/processed_events.sql),
// then:
//
//	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
//	c, err := consumer.New(consumer.Config{
//		Name:    "loyalty-points",    // consumer group and processed_events.consumer
//		Brokers: []string{"kafka:9092"},
//		Topics:  []string{"orders"},
//	}, pool, func(ctx context.Context, tx pgx.Tx, m consumer.Message) error {
//		var o OrderPlaced
//		if err := json.Unmarshal(m.Value, &o); err != nil {
//			return err
//		}
//		_, err := tx.Exec(ctx, `INSERT INTO loyalty_points (customer_id, points) VALUES ($1, $2)
//			ON CONFLICT (customer_id) DO UPDATE SET points = loyalty_points.points + EXCLUDED.points`,
//			o.CustomerID, o.TotalCents/100)
//		return err
//	})
//	err = c.Run(ctx) // until ctx is cancelled: returns nil after a clean stop
//
// Keep the handler's effects inside tx. Anything else it does (an HTTP
// call, an e-mail) is not undone by a rollback and may happen again.
//
// # Event ids
//
// The event id comes from the message header Config.IDHeader ("id", which
// the relay always sets to the outbox row's id; "event_id" for the polling
// article's relay). A message without it cannot be deduplicated, so it is
// never applied: it goes to the dead-letter topic, or stops Run with
// ErrNoEventID.
//
// # Failures
//
// A handler error rolls the transaction back and is retried after a
// backoff that doubles from Config.Backoff up to Config.MaxBackoff. After
// Config.MaxAttempts attempts the message goes to Config.DeadLetterTopic
// with the relay's dead-letter headers (__connect.errors.topic,
// .partition, .offset, .exception.message, … and __outboxrelay.event.id)
// and the consumer goes on; without a dead-letter topic Run stops with a
// *MessageError naming topic, partition, offset and event id, and the
// offset stays uncommitted, so a restart tries the message again. A dead
// letter is not recorded in processed_events: re-publishing it once the
// cause is fixed applies it. Failures of PostgreSQL or Kafka themselves
// (begin, commit, offset commit) are retried the same way but never
// dead-lettered: they stop Run, since the message is not at fault.
//
// # Order and stopping
//
// Messages are handled one at a time in the order they are fetched, so the
// events of one partition (of one key, as the relay partitions by key) are
// applied in order. Cancelling Run's context finishes the message in hand,
// transaction and offset commit included, and leaves the group: a clean
// stop has every processed message committed.
//
// # Retention
//
// processed_events grows by one row per event. DeleteProcessed removes old
// rows; its doc says how old is safe (longer than the topic keeps
// messages).
//
// # Tracing
//
// With Config.TracerProvider each message is handled in an OpenTelemetry
// span, "process <topic>", that continues the trace in its traceparent
// header (the relay's publish span; Config.TraceLinked links to it
// instead), covering the dedup check, the handler, the commit and the
// offset commit; a duplicate's span has outboxrelay.consumer.duplicate
// true and says it was skipped (docs/tracing.md).
package consumer
