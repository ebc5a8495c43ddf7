package consumer

import (
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/trace"
)

// Config configures a Consumer. The zero value of every optional field
// means the default given in its comment; Validate fills them in.
type Config struct {
	// Name identifies the consumer: it is the Kafka consumer group id and
	// the value of processed_events.consumer, so two consumers of the same
	// topic (loyalty points, e-mails) each apply every event once. Required.
	Name string
	// Brokers are the Kafka bootstrap servers (bootstrap.servers). Required.
	Brokers []string
	// Topics are read as one consumer group. Required.
	Topics []string
	// Dialer connects to Kafka (TLS, SASL); nil: plaintext, kafka-go's
	// default dialer.
	Dialer *kafka.Dialer

	// IDHeader is the header holding the event id; default "id", which
	// the relay (and the EventRouter) always sets. A message without it is
	// an error (see the package doc), never a silent second application.
	IDHeader string
	// ProcessedTable is the deduplication table, "processed_events" by
	// default, optionally schema-qualified; its DDL is in sql/ (outboxrelay
	// sql prints it).
	ProcessedTable string

	// MaxAttempts is how often the handler is tried for one message before
	// the message is dead-lettered or Run stops; default 5.
	MaxAttempts int
	// Backoff is the wait after the first failure, doubled after each
	// further one up to MaxBackoff; defaults 100 ms and 5 s.
	Backoff    time.Duration
	MaxBackoff time.Duration
	// DeadLetterTopic, when set, receives a message whose handler failed
	// MaxAttempts times (or that has no event id), with the original key,
	// value and headers plus headers saying why, as the relay's
	// dead-letter topic does; the consumer then goes on. Empty: Run stops
	// with a *MessageError. Created with one partition when missing.
	DeadLetterTopic string

	// SessionTimeout is the group session timeout (session.timeout.ms):
	// how long the group waits for a consumer that died before giving its
	// partitions to another; default 10 s (the broker's
	// group.min.session.timeout.ms is 6 s by default).
	SessionTimeout time.Duration

	// AfterCommit, when set, is called after a message's transaction
	// committed and before its offset is committed, with applied false
	// for a duplicate. It is the point where a crash leaves the side
	// effect done and the offset not: use it for metrics, or to test that
	// such a crash applies nothing twice.
	AfterCommit func(m Message, applied bool)

	// Logger receives one line per retry, dead letter and duplicate; nil
	// discards.
	Logger *slog.Logger

	// TracerProvider, when set, records each handled message in a span
	// "process <topic>" (OpenTelemetry, kind consumer) covering the
	// dedup check, the handler, the commit and the offset commit; the
	// handler's ctx holds it. Its parent is the context in the message's
	// traceparent/tracestate headers (the relay's publish span), so the
	// request that wrote the event, the relay and the consumer are one
	// trace. nil: no spans.
	TracerProvider trace.TracerProvider
	// TraceLinked starts each message's span in a trace of its own,
	// linked to the headers' context, instead of as its child.
	TraceLinked bool
}

// tableName is a table name or schema.table of plain identifiers.
var tableName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_$]*(\.[A-Za-z_][A-Za-z0-9_$]*)?$`)

// Validate fills in defaults and checks the configuration; each error
// names the field.
func (c *Config) Validate() error {
	var errs []error
	if strings.TrimSpace(c.Name) == "" {
		errs = append(errs, errors.New("consumer: Name is required: it is the consumer group and the processed_events.consumer value, e.g. \"loyalty-points\""))
	}
	if len(c.Brokers) == 0 {
		errs = append(errs, errors.New("consumer: Brokers is required, e.g. []string{\"kafka:9092\"}"))
	}
	if len(c.Topics) == 0 {
		errs = append(errs, errors.New("consumer: Topics is required: name the topics the relay routes the events to"))
	}
	if c.IDHeader == "" {
		c.IDHeader = "id"
	}
	if c.ProcessedTable == "" {
		c.ProcessedTable = "processed_events"
	}
	if !tableName.MatchString(c.ProcessedTable) {
		errs = append(errs, fmt.Errorf("consumer: ProcessedTable %q is not a table or schema.table name", c.ProcessedTable))
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = 5
	}
	if c.MaxAttempts < 0 {
		errs = append(errs, fmt.Errorf("consumer: MaxAttempts %d: write 1 or more (0 means 5)", c.MaxAttempts))
	}
	if c.Backoff <= 0 {
		c.Backoff = 100 * time.Millisecond
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = 5 * time.Second
	}
	if c.MaxBackoff < c.Backoff {
		errs = append(errs, fmt.Errorf("consumer: MaxBackoff %s is below Backoff %s", c.MaxBackoff, c.Backoff))
	}
	if c.SessionTimeout <= 0 {
		c.SessionTimeout = 10 * time.Second
	}
	for _, t := range c.Topics {
		if t == c.DeadLetterTopic && t != "" {
			// Dead letters would be read again and fail again, forever.
			errs = append(errs, fmt.Errorf("consumer: DeadLetterTopic %q is also in Topics; give it its own topic", t))
		}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return errors.Join(errs...)
}

// backoff is the wait after the n-th failed attempt (n >= 1).
func (c *Config) backoff(n int) time.Duration {
	d := c.Backoff
	for i := 1; i < n && d < c.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, c.MaxBackoff)
}
