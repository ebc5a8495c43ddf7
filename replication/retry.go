package replication

import (
	"errors"

	"github.com/outboxrelay/outboxrelay/postgres"
)

// Retryable decides whether an error of logical replication ends the
// relay or only this session: a lost failover lock is retried (the next
// session waits for the lock again); everything else is a PostgreSQL
// connection's error, decided by postgres.Retryable. The relay asks it
// through Source.Retryable.
func Retryable(err error) bool {
	return errors.Is(err, ErrLockLost) || postgres.Retryable(err)
}
