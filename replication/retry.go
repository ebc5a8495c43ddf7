package replication

import (
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/outboxrelay/outboxrelay/postgres"
)

// Retryable decides whether an error of logical replication ends the
// relay or only this session: a lost failover lock is retried (the next
// session waits for the lock again), and so is a recovery conflict on a
// hot standby (the next session's preflight stops the relay naming the
// reason if the conflict invalidated the slot, and resumes from the slot
// if it did not); everything else is a PostgreSQL connection's error,
// decided by postgres.Retryable. The relay asks it through
// Source.Retryable.
func Retryable(err error) bool {
	return errors.Is(err, ErrLockLost) || recoveryConflict(err) || postgres.Retryable(err)
}

// recoveryConflict: a hot standby cancelled the session's query or
// walsender because of a recovery conflict (SQLSTATE 40001, "canceling
// statement due to conflict with recovery", or 40P01 for a buffer-pin
// deadlock with the startup process).
func recoveryConflict(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40001" || pgErr.Code == "40P01") && strings.Contains(pgErr.Message, "conflict with recovery")
}
