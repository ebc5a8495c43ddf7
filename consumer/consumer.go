package consumer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/trace"
)

// Message is one Kafka message with the event id read from its header.
type Message struct {
	kafka.Message
	EventID string
}

// Header returns the value of the first header called key, and whether
// there is one.
func (m *Message) Header(key string) ([]byte, bool) {
	for _, h := range m.Headers {
		if h.Key == key {
			return h.Value, true
		}
	}
	return nil, false
}

// Handler applies one event's side effect through tx, the transaction that
// also records the event as processed. It must not commit or roll back tx,
// and should keep its effects inside tx: what it does elsewhere (an HTTP
// call, an e-mail) is not undone when the transaction rolls back and may
// happen again. An error rolls the transaction back; the handler is then
// retried (see Config.MaxAttempts).
type Handler func(ctx context.Context, tx pgx.Tx, m Message) error

// DB begins the transactions: a *pgxpool.Pool or a *pgx.Conn.
type DB interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Stats counts what a Consumer did since New.
type Stats struct {
	Applied      int64 // handler ran and its transaction committed
	Duplicates   int64 // already in processed_events: handler skipped
	DeadLettered int64 // sent to Config.DeadLetterTopic
	Retries      int64 // failed attempts that were tried again
}

// Consumer runs a Handler over a consumer group, once per event.
type Consumer struct {
	cfg                                        Config
	db                                         DB
	handle                                     Handler
	dedup                                      string       // the processed_events INSERT
	tracer                                     trace.Tracer // nil: no spans
	applied, duplicates, deadLettered, retries atomic.Int64
	spinEvery                                  time.Duration // watchSpin's interval: spinEvery, shorter in tests
}

// New checks cfg and returns a Consumer; it connects to nothing (Run does).
func New(cfg Config, db DB, h Handler) (*Consumer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if db == nil || h == nil {
		return nil, errors.New("consumer: New needs a DB and a Handler")
	}
	c := &Consumer{
		cfg: cfg, db: db, handle: h,
		spinEvery: spinEvery,
		dedup:     "INSERT INTO " + quoteTable(cfg.ProcessedTable) + " (consumer, event_id) VALUES ($1, $2) ON CONFLICT DO NOTHING",
	}
	if cfg.TracerProvider != nil {
		c.tracer = cfg.TracerProvider.Tracer("github.com/outboxrelay/outboxrelay/consumer")
	}
	return c, nil
}

// Stats returns the counters so far.
func (c *Consumer) Stats() Stats {
	return Stats{Applied: c.applied.Load(), Duplicates: c.duplicates.Load(), DeadLettered: c.deadLettered.Load(), Retries: c.retries.Load()}
}

// Run joins the consumer group and handles messages until ctx is done
// (then it returns nil) or a message stops it (a *MessageError). Messages
// are handled one at a time, in the order fetched, so each partition's
// order is kept. Stopping finishes the message in hand (its transaction and
// its offset commit), then leaves the group.
func (c *Consumer) Run(ctx context.Context) error {
	dlq, err := c.deadLetterWriter(ctx)
	if err != nil {
		return err
	}
	if dlq != nil {
		defer dlq.Close()
	}
	if err := c.waitForTopics(ctx); err != nil {
		return err
	}
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:     c.cfg.Brokers,
		GroupID:     c.cfg.Name,
		GroupTopics: c.cfg.Topics,
		Dialer:      c.cfg.Dialer,
		StartOffset: kafka.FirstOffset,
		// Partitions added to a topic later join the assignment.
		WatchPartitionChanges: true,
		CommitInterval:        0, // synchronous: CommitMessages returns after the broker stored it
		SessionTimeout:        c.cfg.SessionTimeout,
		HeartbeatInterval:     c.cfg.SessionTimeout / 5,
		RebalanceTimeout:      c.cfg.SessionTimeout,
		// Close waits for the fetches in flight, each up to MaxWait: a
		// short one keeps a stop quick.
		MaxWait:     time.Second,
		ErrorLogger: kafka.LoggerFunc(c.logReaderError),
	})
	defer r.Close()
	watch, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go c.watchSpin(watch, r, c.spinEvery)
	for {
		km, err := r.FetchMessage(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("consumer %s: fetching: %w", c.cfg.Name, err)
		}
		if err := c.process(ctx, r, dlq, km); err != nil {
			if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				return nil // stopped while waiting to retry: not committed, read again later
			}
			return err
		}
	}
}

// waitForTopics waits until every topic exists. A group that joins before
// its topic exists is assigned nothing and stays so: the relay creates a
// topic with its first event, which may come after the consumer starts.
func (c *Consumer) waitForTopics(ctx context.Context) error {
	dialer := c.cfg.Dialer
	if dialer == nil {
		dialer = kafka.DefaultDialer
	}
	for attempt := 1; ; attempt++ {
		missing, err := c.missingTopics(ctx, dialer)
		if err == nil && len(missing) == 0 {
			return nil
		}
		if attempt == 1 || attempt%30 == 0 {
			c.cfg.Logger.Warn("consumer: waiting for the topics to exist", "consumer", c.cfg.Name, "missing", missing, "err", err)
		}
		if err := sleep(ctx, time.Second); err != nil {
			return nil // stopped before starting
		}
	}
}

func (c *Consumer) missingTopics(ctx context.Context, dialer *kafka.Dialer) ([]string, error) {
	var lastErr error
	for _, b := range c.cfg.Brokers {
		conn, err := dialer.DialContext(ctx, "tcp", b)
		if err != nil {
			lastErr = err
			continue
		}
		parts, err := conn.ReadPartitions()
		conn.Close()
		if err != nil {
			lastErr = err
			continue
		}
		have := map[string]bool{}
		for _, p := range parts {
			have[p.Topic] = true
		}
		var missing []string
		for _, t := range c.cfg.Topics {
			if !have[t] {
				missing = append(missing, t)
			}
		}
		return missing, nil
	}
	return c.cfg.Topics, lastErr
}

// logReaderError logs kafka-go's reader errors, except the read timeout
// at the end of an idle partition: kafka-go sets the connection's deadline
// to MaxWait, the time the broker may hold the fetch too, so it fires
// routinely and the reader simply fetches again.
func (c *Consumer) logReaderError(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if strings.HasSuffix(msg, "i/o timeout") {
		return
	}
	c.cfg.Logger.Warn("consumer: "+msg, "consumer", c.cfg.Name)
}

// process applies one message and commits its offset.
func (c *Consumer) process(ctx context.Context, r *kafka.Reader, dlq *kafka.Writer, km kafka.Message) error {
	m := Message{Message: km}
	if id, ok := m.Header(c.cfg.IDHeader); ok {
		m.EventID = string(id)
	}
	msgErr := func(attempts int, err error) *MessageError {
		return &MessageError{Consumer: c.cfg.Name, Topic: m.Topic, Partition: m.Partition, Offset: m.Offset, EventID: m.EventID, Attempts: attempts, Err: err}
	}
	// The message in hand is finished even when ctx is cancelled: its
	// transaction and its offset commit are not interrupted halfway.
	work, span := c.startSpan(context.WithoutCancel(ctx), m)
	err := c.processIn(ctx, work, r, dlq, m, msgErr)
	endSpan(span, err)
	return err
}

// processIn is process's work, in the message's span (work holds it).
func (c *Consumer) processIn(ctx, work context.Context, r *kafka.Reader, dlq *kafka.Writer, m Message, msgErr func(int, error) *MessageError) error {
	if m.EventID == "" {
		cause := fmt.Errorf("%w %q; the relay always sets it, so check Config.IDHeader and who wrote this message", ErrNoEventID, c.cfg.IDHeader)
		if err := c.deadLetter(work, dlq, m, cause, 0); err != nil {
			return msgErr(0, err)
		}
	} else if err := c.applyWithRetries(ctx, work, dlq, m, msgErr); err != nil {
		return err
	}
	return c.commitOffset(ctx, work, r, m, msgErr)
}

// applyWithRetries runs apply until it succeeds, retrying with capped
// backoff; after MaxAttempts the message is dead-lettered (handler
// failures only) or the error stops Run.
func (c *Consumer) applyWithRetries(ctx, work context.Context, dlq *kafka.Writer, m Message, msgErr func(int, error) *MessageError) error {
	for attempt := 1; ; attempt++ {
		applied, err := c.apply(work, m)
		if err == nil {
			if c.cfg.AfterCommit != nil {
				c.cfg.AfterCommit(m, applied)
			}
			return nil
		}
		var step *stepError
		if attempt >= c.cfg.MaxAttempts {
			if errors.As(err, &step) {
				return msgErr(attempt, err)
			}
			if err := c.deadLetter(work, dlq, m, err, attempt); err != nil {
				return msgErr(attempt, err)
			}
			return nil
		}
		c.retries.Add(1)
		wait := c.cfg.backoff(attempt)
		spanRetry(work, attempt, err)
		c.cfg.Logger.Warn("consumer: handling failed, retrying", "consumer", c.cfg.Name, "topic", m.Topic,
			"partition", m.Partition, "offset", m.Offset, "event_id", m.EventID, "attempt", attempt, "wait", wait, "err", err)
		if err := sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// apply runs one attempt: in one transaction, record the event id and,
// when it is new, run the handler. It reports whether the handler ran.
func (c *Consumer) apply(ctx context.Context, m Message) (bool, error) {
	tx, err := c.db.Begin(ctx)
	if err != nil {
		return false, &stepError{"beginning the transaction", err}
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	tag, err := tx.Exec(ctx, c.dedup, c.cfg.Name, m.EventID)
	if err != nil {
		return false, &stepError{"recording the event in " + c.cfg.ProcessedTable, err}
	}
	applied := tag.RowsAffected() == 1
	if applied {
		if err := c.handle(ctx, tx, m); err != nil {
			return false, fmt.Errorf("handler: %w", err)
		}
	}
	// A commit whose answer is lost is retried like any failure: the
	// retry finds the event recorded (or not) and does the right thing.
	if err := tx.Commit(ctx); err != nil {
		return false, &stepError{"committing", err}
	}
	spanApplied(ctx, applied)
	if applied {
		c.applied.Add(1)
	} else {
		c.duplicates.Add(1)
		c.cfg.Logger.Info("consumer: duplicate skipped", "consumer", c.cfg.Name, "topic", m.Topic,
			"partition", m.Partition, "offset", m.Offset, "event_id", m.EventID)
	}
	return applied, nil
}

// commitOffset commits the message's offset, retrying with backoff. A
// failure here loses nothing: the message comes again and is a duplicate.
func (c *Consumer) commitOffset(ctx, work context.Context, r *kafka.Reader, m Message, msgErr func(int, error) *MessageError) error {
	for attempt := 1; ; attempt++ {
		cctx, cancel := context.WithTimeout(work, 10*time.Second)
		err := r.CommitMessages(cctx, m.Message)
		cancel()
		if err == nil {
			return nil
		}
		if attempt >= c.cfg.MaxAttempts {
			return msgErr(attempt, &stepError{"committing the offset", err})
		}
		if err := sleep(ctx, c.cfg.backoff(attempt)); err != nil {
			return err
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func quoteTable(name string) string {
	parts := strings.Split(name, ".")
	for i, p := range parts {
		parts[i] = `"` + p + `"`
	}
	return strings.Join(parts, ".")
}
