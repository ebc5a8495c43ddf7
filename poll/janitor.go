package poll

import "github.com/outboxrelay/outboxrelay/postgres"

// JanitorRule is poll mode's rule for the clean-up janitor
// (postgres.Janitor, outbox.retention.ms): it deletes rows marked
// dispatched longer ago than the retention. A row is marked only after
// Kafka acknowledged it, so no slot needs asking: the dispatched column is
// the proof.
func JanitorRule(cfg Config) postgres.JanitorRule {
	return postgres.JanitorRule{Rows: "dispatched (poll mode)", Column: cfg.Dispatched, Key: KeyDispatched}
}
