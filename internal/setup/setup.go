// Package setup turns a loaded connector file into the parsed, validated
// configuration of every component, once, for run, check and verify alike:
// the router's options (and placements), the PostgreSQL side, poll mode,
// the producer, the offsets topic, exactly-once, the janitor and the
// poison-row policy; Shadow turns it into a shadow run's. From it the
// wiring builds the producer (Producer) and the relay's delivery of the
// configured guarantee (Delivery: at-least-once or exactly-once).
// Nothing here connects.
package setup

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/outboxrelay/outboxrelay/internal/config"
	"github.com/outboxrelay/outboxrelay/internal/confkey"
	"github.com/outboxrelay/outboxrelay/poll"
	"github.com/outboxrelay/outboxrelay/postgres"
	"github.com/outboxrelay/outboxrelay/registry"
	"github.com/outboxrelay/outboxrelay/relay"
	"github.com/outboxrelay/outboxrelay/replication"
	"github.com/outboxrelay/outboxrelay/router"
	"github.com/outboxrelay/outboxrelay/sink"
	"github.com/outboxrelay/outboxrelay/sink/exactlyonce"
)

// Setup is every component's configuration, parsed and validated.
type Setup struct {
	File      *config.Config
	Postgres  replication.Config
	Router    *router.Router
	Kafka     sink.Config
	Janitor   postgres.JanitorConfig
	Poll      poll.Config // outbox.capture.mode and outbox.poll.*
	Tolerance string      // errors.tolerance
	Offsets   OffsetsConfig
	// ExactlyOnceRequired: exactly.once.support=required, with the keys
	// of Kafka transactions in ExactlyOnce (parsed and checked either way).
	ExactlyOnceRequired bool
	ExactlyOnce         exactlyonce.Config
	// Registry is the schema-registry converters' configuration
	// (key.converter.* and value.converter.*).
	Registry registry.Config
}

// parseExactlyOnce reads exactly.once.support (required) and the keys of
// Kafka transactions.
func parseExactlyOnce(relay map[string]string, o OffsetsConfig, poll bool) (required bool, c exactlyonce.Config, _ error) {
	v := confkey.Read(relay)
	var errs []error
	read := func(err error) { errs = append(errs, err) }
	c = exactlyonce.Config{TransactionalID: o.Connector, Interval: o.Every}
	support, err := v.Enum("exactly.once.support")
	read(err)
	required = support == "required"
	if v.Set("transactional.id") {
		c.TransactionalID, err = v.Text("transactional.id")
		read(err)
	}
	c.Boundary, err = v.Enum("transaction.boundary")
	read(err)
	c.Timeout, err = v.Millis("transaction.timeout.ms")
	read(err)
	if v.Set("transaction.boundary.interval.ms") {
		c.Interval, err = v.Millis("transaction.boundary.interval.ms")
		read(err)
	}
	if c.Boundary == exactlyonce.BoundaryInterval && c.Interval >= c.Timeout/2 {
		errs = append(errs, fmt.Errorf("transaction.boundary.interval.ms %d must be under half of transaction.timeout.ms %d: a Kafka transaction open longer than the timeout is aborted by the coordinator; lower the interval or raise transaction.timeout.ms (up to the broker's transaction.max.timeout.ms)",
			c.Interval.Milliseconds(), c.Timeout.Milliseconds()))
	}
	if required && poll {
		errs = append(errs, errors.New("exactly.once.support=required works with logical replication (the commit position skips what Kafka has); poll mode is at-least-once: remove exactly.once.support or outbox.capture.mode=poll"))
	}
	if required && c.TransactionalID == "" {
		errs = append(errs, errors.New("exactly.once.support=required needs a transactional.id: give the connector a name, or set transactional.id"))
	}
	return required, c, errors.Join(errs...)
}

// OffsetsConfig says where the confirmed position is recorded.
type OffsetsConfig struct {
	Topic       string        // offsets.storage.topic, default outboxrelay-offsets
	Replication int           // offsets.storage.replication.factor, default -1
	Every       time.Duration // offset.flush.interval.ms, default 1 s
	Connector   string        // the key's name: the connector's name, else topic.prefix
}

func parseOffsets(relay map[string]string, name, prefix string) (OffsetsConfig, error) {
	v := confkey.Read(relay)
	c := OffsetsConfig{Connector: name}
	if c.Connector == "" {
		c.Connector = prefix
	}
	topic, err1 := v.Text("offsets.storage.topic")
	rf, err2 := v.Int("offsets.storage.replication.factor")
	every, err3 := v.Millis("offset.flush.interval.ms")
	c.Topic, c.Replication, c.Every = topic, int(rf), every
	errs := []error{err1, err2, err3}
	if err2 == nil && rf == 0 {
		errs = append(errs, fmt.Errorf("offsets.storage.replication.factor \"0\": write a positive number, or -1 for the broker's default"))
	}
	return c, errors.Join(errs...)
}

// Parse validates every section of cfg before anything connects, and
// reports all the errors it finds at once. Router warnings go to log.
func Parse(cfg *config.Config, log *slog.Logger) (*Setup, error) {
	var errs []error
	rcfg, warnings, err := router.ParseConfig(cfg.Router)
	errs = append(errs, err)
	for _, w := range warnings {
		log.Warn("config: " + w)
	}
	pcfg, err := replication.ParseConfig(cfg.Postgres)
	errs = append(errs, err)
	pcfg.Messages = rcfg.Messages // the stream asks for messages only when they are routed
	if !rcfg.Messages && (pcfg.MessageIncludeText != "" || pcfg.MessageExcludeText != "") {
		log.Warn("config: message.prefix.include.list / message.prefix.exclude.list have no effect: transforms has no " + router.DecodeMessageClass + ", so no logical decoding message is read")
	}
	if pcfg.MessagesOnly && !rcfg.Messages {
		errs = append(errs, fmt.Errorf("%s is true but transforms has no %s: without it no message is routed; chain it before the EventRouter, or remove %s",
			replication.KeyMessagesOnly, router.DecodeMessageClass, replication.KeyMessagesOnly))
	}
	if err == nil {
		_, err = pcfg.ConnConfig() // TLS files readable, values valid
		errs = append(errs, err)
	}
	scfg, err := sink.ParseConfig(cfg.Kafka)
	errs = append(errs, err)
	jcfg, err := postgres.ParseJanitorConfig(cfg.Relay)
	errs = append(errs, err)
	ocfg, err := parseOffsets(cfg.Relay, cfg.Name, pcfg.TopicPrefix)
	errs = append(errs, err)
	pollCfg, err := poll.ParseConfig(cfg.Relay, rcfg.EventIDField, rcfg.EventKeyField, jcfg.Column)
	errs = append(errs, err)
	if err == nil && pollCfg.Poll() && rcfg.Messages {
		// Polling reads tables; logical decoding messages exist only in the WAL.
		errs = append(errs, fmt.Errorf("%s=poll cannot read logical decoding messages (transforms has %s): use logical replication, or remove the decode transformation", poll.KeyMode, router.DecodeMessageClass))
	}
	eosRequired, eos, err := parseExactlyOnce(cfg.Relay, ocfg, pollCfg.Poll())
	errs = append(errs, err)
	if eosRequired && scfg.DisableIdempotence {
		// Java refuses a transactional.id with idempotence disabled: a
		// transactional producer is idempotent.
		errs = append(errs, fmt.Errorf("%s=false with exactly.once.support=required: Kafka transactions need the idempotent producer; remove %s (or set it to true), or remove exactly.once.support",
			sink.KeyIdempotence, sink.KeyIdempotence))
	}
	reg, err := registry.ParseConfig(cfg.Relay, rcfg.KeyRegistry, rcfg.ValueRegistry)
	errs = append(errs, err)
	if err == nil {
		_, err = registry.NewConverter(reg, Formats()) // formats built in, TLS files readable
		errs = append(errs, err)
	}
	tolerance, err := confkey.Read(cfg.Relay).Enum("errors.tolerance")
	errs = append(errs, err)
	if err == nil {
		_, err = relay.ParseTolerance(tolerance)
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	rt, err := router.New(rcfg, log)
	if err != nil {
		return nil, err
	}
	return &Setup{File: cfg, Postgres: pcfg, Router: rt, Kafka: scfg, Janitor: jcfg, Poll: pollCfg, Tolerance: tolerance, Offsets: ocfg, ExactlyOnceRequired: eosRequired, ExactlyOnce: eos, Registry: reg}, nil
}

// Converter returns the stage that turns records into a schema
// registry's wire format (key.converter or value.converter is
// AvroConverter or JsonSchemaConverter), or nil when there is none. Each
// call returns a new converter with caches of its own: one per run.
func (s *Setup) Converter() (relay.Converter, error) {
	c, err := s.RegistryConverter()
	if err != nil || c == nil {
		return nil, err
	}
	return c, nil
}

// RegistryConverter is Converter as the registry's type, nil without a
// registry converter (check inspects subjects through it).
func (s *Setup) RegistryConverter() (*registry.Converter, error) {
	return registry.NewConverter(s.Registry, Formats())
}

// Producer returns the Kafka producer the configuration describes.
func (s *Setup) Producer(log *slog.Logger) (*sink.Producer, error) {
	return sink.NewProducer(s.Kafka, log)
}

// Poison returns the poison-row policy, dead-lettering through p.
func (s *Setup) Poison(p *sink.Producer, log *slog.Logger) (relay.Poison, error) {
	return relay.NewPoisonPolicy(s.Tolerance, s.File.Name, sink.DeadLetters(p), s.Kafka.DeadLetterTopic, log)
}

// AtLeastOnce returns the at-least-once delivery through p, recording the
// confirmed position in the offsets topic; in poll mode, which has no
// slot to lose (the table is its position), nowhere.
func (s *Setup) AtLeastOnce(p *sink.Producer) *sink.AtLeastOnce {
	if s.Poll.Poll() {
		return sink.NewAtLeastOnce(p, nil)
	}
	o := s.Offsets
	return sink.NewAtLeastOnce(p, p.Offsets(o.Topic, o.Connector, s.Postgres.TopicPrefix, o.Replication))
}

// Delivery returns the data path's delivery: exactly-once in Kafka
// transactions with exactly.once.support=required, else at-least-once.
func (s *Setup) Delivery(p *sink.Producer, log *slog.Logger) (relay.Delivery, error) {
	if !s.ExactlyOnceRequired {
		return s.AtLeastOnce(p), nil
	}
	txn, err := s.ExactlyOnceSink(p, log)
	if err != nil {
		return nil, err
	}
	return exactlyonce.NewDelivery(txn), nil
}

// ExactlyOnceSink returns the transactional sink of
// exactly.once.support=required on p's connections, recording positions
// in the offsets topic.
func (s *Setup) ExactlyOnceSink(p *sink.Producer, log *slog.Logger) (*exactlyonce.Sink, error) {
	c, o := s.ExactlyOnce, s.Offsets
	// Half of the relay's in-flight budget (relay.Options in main), so
	// that a PostgreSQL transaction larger than it still streams.
	c.CarryRecords, c.CarryBytes = relay.DefaultMaxInFlightRecords/2, int(s.Kafka.BufferMemory/2)
	return exactlyonce.New(p, p.Offsets(o.Topic, o.Connector, s.Postgres.TopicPrefix, o.Replication), c, log)
}
