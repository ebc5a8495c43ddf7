package replication

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/outboxrelay/outboxrelay/internal/confkey"
	"github.com/outboxrelay/outboxrelay/internal/msgprefix"
	"github.com/outboxrelay/outboxrelay/postgres"
)

// Snapshot modes (connector key snapshot.mode).
const (
	SnapshotInitial     = "initial"      // emit existing rows once, when the slot is new
	SnapshotNoData      = "no_data"      // stream only; aliases schema_only, never
	SnapshotInitialOnly = "initial_only" // emit existing rows, then stop
	SnapshotWhenNeeded  = "when_needed"  // like initial: rows are read when the slot is created
)

// Publication auto-create modes (connector key publication.autocreate.mode).
const (
	PublicationDisabled  = "disabled"
	PublicationFiltered  = "filtered"
	PublicationAllTables = "all_tables"
	PublicationNoTables  = "no_tables"
)

// Config is the logical replication side of a Debezium PostgreSQL
// connector config: the connection (postgres.Config, embedded) and the
// keys of the slot, the publication, the snapshot, messages, heartbeats and
// retries. Build it with ParseConfig; every field's doc names its
// connector key and default.
type Config struct {
	postgres.Config

	Slot           string // slot.name, default debezium
	DropSlotOnStop bool   // slot.drop.on.stop, default false
	// SlotFailover (slot.failover, default false; PostgreSQL 17+) creates
	// the slot with failover enabled, and enables it on an existing slot,
	// so that standbys with sync_replication_slots = on keep a copy of it
	// that survives a failover.
	SlotFailover bool
	// SlotMaxRetries and SlotRetryDelay (slot.max.retries, default 6;
	// slot.retry.delay.ms, default 10000, as Debezium) bound the wait for a
	// slot that another connection still holds, e.g. the walsender of a
	// relay that just died, before the relay gives up with an error.
	SlotMaxRetries int
	SlotRetryDelay time.Duration

	Publication string // publication.name, default dbz_publication
	AutoCreate  string // publication.autocreate.mode, default all_tables

	SnapshotMode string // snapshot.mode, default initial

	// Messages: logical decoding messages are routed (the router's chain
	// has DecodeLogicalDecodingMessageContent; setup sets it). Only then
	// does START_REPLICATION ask pgoutput for them (PostgreSQL 14+).
	Messages bool
	// MessagesOnly is outbox.messages.only (outboxrelay's own, default
	// false): the events are only logical decoding messages, so
	// table.include.list must match no table. Without it a list that
	// matches nothing stays a start-up error (a typo, or the table not
	// created yet), messages or not.
	MessagesOnly bool
	// MessagePrefixes are message.prefix.include.list and
	// message.prefix.exclude.list, compiled from the two texts: regexes
	// matched case-insensitively against the whole prefix, as Debezium's
	// Predicates do. At most one is set.
	MessagePrefixes                        msgprefix.Filter
	MessageIncludeText, MessageExcludeText string

	HeartbeatInterval time.Duration // heartbeat.interval.ms, default 0 (off)
	HeartbeatQuery    string        // heartbeat.action.query
	// HeartbeatTopic is <topic.heartbeat.prefix>.<topic.prefix>, Debezium's
	// heartbeat topic (prefix default __debezium-heartbeat).
	HeartbeatTopic string
	StatusInterval time.Duration // status.update.interval.ms, default 10 s
	// MaxRetries (errors.max.retries, default -1: forever) bounds the
	// reconnects after transient failures in a row; RetryWait
	// (retriable.restart.connector.wait.ms, default 10 s) caps the
	// exponential backoff between them.
	MaxRetries  int
	RetryWait   time.Duration
	TopicPrefix string // topic.prefix (required)
}

// KeyMessagesOnly is outbox.messages.only (Config.MessagesOnly).
const KeyMessagesOnly = "outbox.messages.only"

// ParseConfig reads the connection keys (postgres.ParseConfig) and the
// replication keys of a connector config map, through their declarations
// (internal/confkey), which give the defaults and ranges. Keys that belong to other
// components are ignored here; unknown keys are reported by the caller,
// which sees the whole map.
func ParseConfig(m map[string]string) (Config, error) {
	pg, pgErr := postgres.ParseConfig(m)
	r := confkey.Collect(m)
	c := Config{
		Config:             pg,
		Slot:               r.Text("slot.name"),
		Publication:        r.Text("publication.name"),
		AutoCreate:         strings.ToLower(r.Text("publication.autocreate.mode")),
		MessageIncludeText: m["message.prefix.include.list"],
		MessageExcludeText: m["message.prefix.exclude.list"],
		SnapshotMode:       strings.ToLower(r.Text("snapshot.mode")),
		HeartbeatQuery:     m["heartbeat.action.query"],
		TopicPrefix:        m["topic.prefix"],
		DropSlotOnStop:     r.Bool("slot.drop.on.stop"),
		MessagesOnly:       r.Bool(KeyMessagesOnly),
		SlotFailover:       r.Bool("slot.failover"),
		SlotMaxRetries:     int(r.Int("slot.max.retries")),
		SlotRetryDelay:     r.Millis("slot.retry.delay.ms"),
		HeartbeatInterval:  r.Millis("heartbeat.interval.ms"),
		StatusInterval:     r.Millis("status.update.interval.ms"),
		MaxRetries:         int(r.Int("errors.max.retries")),
		RetryWait:          r.Millis("retriable.restart.connector.wait.ms"),
	}
	c.HeartbeatTopic = r.Text("topic.heartbeat.prefix") + "." + c.TopicPrefix
	if err := errors.Join(r.Err(), c.parsePrefixLists()); err != nil {
		return c, errors.Join(pgErr, err)
	}
	return c, errors.Join(pgErr, c.validate())
}

// parsePrefixLists compiles message.prefix.include.list and
// message.prefix.exclude.list (internal/msgprefix).
func (c *Config) parsePrefixLists() error {
	var err error
	c.MessagePrefixes, err = msgprefix.Parse(c.MessageIncludeText, c.MessageExcludeText)
	return err
}

// IncludesMessage reports whether a logical decoding message with this
// prefix is routed: messages are on, and the prefix is in the include
// list (when set) and not in the exclude list.
func (c *Config) IncludesMessage(prefix string) bool {
	return c.Messages && c.MessagePrefixes.Includes(prefix)
}

// Validate checks the connection's keys (postgres.Config.Validate), the
// required keys and the cross-field rules, naming the key and what to
// write instead.
func (c *Config) Validate() error {
	return errors.Join(c.Config.Validate(), c.validate())
}

// validate is Validate's part for the replication keys.
func (c *Config) validate() error {
	var errs []error
	if c.TopicPrefix == "" {
		errs = append(errs, fmt.Errorf("topic.prefix is required; e.g. \"topic.prefix\": \"order_db\""))
	}
	switch c.SnapshotMode {
	case "schema_only", "never":
		c.SnapshotMode = SnapshotNoData
	case SnapshotInitial, SnapshotNoData, SnapshotInitialOnly, SnapshotWhenNeeded:
	case "always":
		// Debezium's always re-reads the table at every start: for an
		// outbox that publishes every event ever written again each time.
		errs = append(errs, fmt.Errorf("snapshot.mode always is not supported: it would publish every outbox row again at each start; use initial (existing rows once, when the slot is created), initial_only or no_data"))
	default:
		errs = append(errs, fmt.Errorf("snapshot.mode %q is not supported; use initial, no_data (alias schema_only, never), initial_only or when_needed", c.SnapshotMode))
	}
	switch c.AutoCreate {
	case PublicationDisabled, PublicationFiltered, PublicationAllTables, PublicationNoTables:
	default:
		errs = append(errs, fmt.Errorf("publication.autocreate.mode %q is not supported; use disabled, filtered, all_tables or no_tables", c.AutoCreate))
	}
	if !validSlotName(c.Slot) {
		errs = append(errs, fmt.Errorf("slot.name %q is not a valid replication slot name: use lower-case letters, digits and underscores, at most 63", c.Slot))
	}
	if c.SlotMaxRetries < 0 || c.SlotRetryDelay < 0 {
		errs = append(errs, fmt.Errorf("slot.max.retries and slot.retry.delay.ms must not be negative (defaults 6 and 10000)"))
	}
	if c.MaxRetries < -1 || c.RetryWait <= 0 {
		errs = append(errs, fmt.Errorf("errors.max.retries must be -1 (forever) or more, retriable.restart.connector.wait.ms positive"))
	}
	if c.StatusInterval <= 0 {
		errs = append(errs, fmt.Errorf("status.update.interval.ms must be positive (default 10000)"))
	}
	if c.HeartbeatInterval < 0 {
		errs = append(errs, fmt.Errorf("heartbeat.interval.ms must be 0 (off) or positive"))
	}
	return errors.Join(errs...)
}

func validSlotName(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}
