package poll

import (
	"time"

	"github.com/outboxrelay/outboxrelay/internal/confkey"
)

// Keys of poll mode (in the connector file's config).
const (
	KeyMode       = "outbox.capture.mode"
	KeyInterval   = "outbox.poll.interval.ms"
	KeyBatch      = "outbox.poll.batch.size"
	KeyDispatched = "outbox.poll.dispatched.column"
	KeyOrder      = "outbox.poll.order.column"
	KeyStuckAfter = "outbox.poll.stuck.after.ms"
)

// Capture modes (outbox.capture.mode).
const (
	ModeLogical = "logical" // logical replication: a slot and a publication (the default)
	ModePoll    = "poll"    // polling the outbox table: no slot, any wal_level
)

// Config is poll mode's configuration. Build it with ParseConfig.
type Config struct {
	Mode string // outbox.capture.mode, default logical
	// Interval (outbox.poll.interval.ms, default 500) is the longest wait
	// between two polls while the outbox is idle; after a poll that found
	// rows the next one follows at once.
	Interval time.Duration
	Batch    int // outbox.poll.batch.size, default 100: rows per claimed batch
	// Dispatched (outbox.poll.dispatched.column, default dispatched_at) is
	// the timestamptz column set when Kafka acknowledged a row; NULL means
	// not yet published.
	Dispatched string
	// Order (outbox.poll.order.column, default: the event id column) orders
	// one aggregate's events: a bigserial, a UUIDv7 or a timestamp. Ties
	// are broken by the event id.
	Order string
	// StuckAfter (outbox.poll.stuck.after.ms, default 300000) is the age
	// after which an undispatched row is counted as stuck and named in a
	// warning; 0 turns the watchdog off.
	StuckAfter time.Duration
	// IDColumn and KeyColumn are the router's event id and key columns
	// (table.field.event.id, table.field.event.key): the id marks rows
	// dispatched, the key hashes aggregates into buckets.
	IDColumn  string
	KeyColumn string
	// AgeColumn is the insert-time column the watchdog measures when the
	// order column is not a timestamp (outbox.retention.column, default
	// created_at).
	AgeColumn string
}

// Poll reports whether the configuration selects poll mode.
func (c Config) Poll() bool { return c.Mode == ModePoll }

// ParseConfig reads poll mode's keys from the connector file's relay keys
// through their declarations (internal/confkey); idColumn and keyColumn
// come from the router's configuration.
func ParseConfig(m map[string]string, idColumn, keyColumn, ageColumn string) (Config, error) {
	c := Config{IDColumn: idColumn, KeyColumn: keyColumn, AgeColumn: ageColumn}
	v := confkey.Read(m)
	var err error
	if c.Mode, err = v.Enum(KeyMode); err != nil {
		return c, err
	}
	if c.Interval, err = v.Millis(KeyInterval); err != nil {
		return c, err
	}
	if c.StuckAfter, err = v.Millis(KeyStuckAfter); err != nil {
		return c, err
	}
	batch, err := v.Int(KeyBatch)
	if err != nil {
		return c, err
	}
	c.Batch = int(batch)
	if c.Dispatched, err = v.Text(KeyDispatched); err != nil {
		return c, err
	}
	if c.Order, err = v.Text(KeyOrder); err != nil {
		return c, err
	}
	if c.Order == "" {
		c.Order = idColumn
	}
	return c, nil
}
