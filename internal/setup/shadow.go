package setup

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/outboxrelay/outboxrelay/router"
)

// ShadowOffsetsTopic is where a shadow run records its position: never the
// connector's own offsets topic, whose record Debezium resumes from.
const ShadowOffsetsTopic = "outboxrelay-shadow-offsets"

// ShadowSlotSuffix is added to slot.name for a shadow run.
const ShadowSlotSuffix = "_shadow"

// Shadow turns set into a shadow run's beside the live Debezium connector
// configured by the same file (docs/migrating-from-debezium.md: a shadow
// run): a slot of its own (<slot.name>_shadow), an offsets topic of its
// own, every topic it writes (routed, heartbeat, dead-letter) under
// prefix, a transactional.id of its own, and no writes to the database
// (the janitor off, no heartbeat.action.query, the slot kept at a stop).
// Poll mode is refused: it marks the rows it sends. It returns what it
// changed, for the start-up log.
func (s *Setup) Shadow(prefix string, log *slog.Logger) ([]string, error) {
	if prefix == "" || strings.ContainsAny(prefix, "$\\") {
		//lint:ignore ST1005 the final '.' is the example prefix's own (shadow.)
		return nil, fmt.Errorf("--shadow %q: write a topic prefix of letters, digits, '.', '_' or '-', e.g. shadow.", prefix)
	}
	if s.Poll.Poll() {
		return nil, errors.New("--shadow with outbox.capture.mode=poll: poll mode marks every row it sends, which would take the rows from the live connector; a shadow run needs logical replication")
	}
	if n := len(s.Postgres.Slot) + len(ShadowSlotSuffix); n > 63 {
		return nil, fmt.Errorf("--shadow: slot.name %q with %q is %d characters, PostgreSQL allows 63: shorten slot.name in a copy of the file for the shadow run (its slot is the copy's slot.name + %q)", s.Postgres.Slot, ShadowSlotSuffix, n, ShadowSlotSuffix)
	}
	var changes []string
	change := func(key, from, to string) {
		changes = append(changes, fmt.Sprintf("%s %q → %q", key, from, to))
	}
	pg := &s.Postgres
	change("slot.name", pg.Slot, pg.Slot+ShadowSlotSuffix)
	pg.Slot += ShadowSlotSuffix
	if pg.DropSlotOnStop {
		change("slot.drop.on.stop", "true", "false")
		pg.DropSlotOnStop = false
	}
	if pg.HeartbeatQuery != "" {
		change("heartbeat.action.query", pg.HeartbeatQuery, "")
		pg.HeartbeatQuery = ""
	}
	change("heartbeat topic", pg.HeartbeatTopic, prefix+pg.HeartbeatTopic)
	pg.HeartbeatTopic = prefix + pg.HeartbeatTopic
	if s.Janitor.Retention > 0 {
		change("outbox.retention.ms", s.Janitor.Retention.String(), "0 (janitor off)")
		s.Janitor.Retention = 0
	}
	change("offsets.storage.topic", s.Offsets.Topic, ShadowOffsetsTopic)
	s.Offsets.Topic = ShadowOffsetsTopic
	if s.ExactlyOnceRequired {
		change("transactional.id", s.ExactlyOnce.TransactionalID, s.ExactlyOnce.TransactionalID+ShadowSlotSuffix)
		s.ExactlyOnce.TransactionalID += ShadowSlotSuffix
	}
	if t := s.Kafka.DeadLetterTopic; t != "" {
		change("errors.deadletterqueue.topic.name", t, prefix+t)
		s.Kafka.DeadLetterTopic = prefix + t
	}
	rcfg := s.Router.Config()
	change("route.topic.replacement", rcfg.RouteTopicReplacement, prefix+rcfg.RouteTopicReplacement)
	rcfg.RouteTopicReplacement = prefix + rcfg.RouteTopicReplacement
	rt, err := router.New(rcfg, log)
	if err != nil {
		return nil, fmt.Errorf("--shadow: %w", err)
	}
	s.Router = rt
	return changes, nil
}
