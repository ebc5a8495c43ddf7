package replication

import (
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/outboxrelay/outboxrelay/postgres"
)

// ErrRecoveryConflict: a hot standby cancelled a query or the walsender
// of the session because of a recovery conflict (a lock, a snapshot, a
// buffer pin or the slot itself conflicted with the WAL being replayed).
// Retryable: the next session's preflight stops the relay naming the
// reason if the conflict invalidated the slot, and resumes from the slot
// if it did not.
var ErrRecoveryConflict = errors.New("recovery conflict on the hot standby")

// Retryable decides whether an error of logical replication ends the
// relay or only this session: a lost failover lock is retried (the next
// session waits for the lock again), and so is a recovery conflict on a
// hot standby; everything else is a PostgreSQL connection's error,
// decided by postgres.Retryable. The relay asks it through
// Source.Retryable.
func Retryable(err error) bool {
	return errors.Is(err, ErrLockLost) || errors.Is(err, ErrRecoveryConflict) || recoveryConflictText(err) || postgres.Retryable(err)
}

// standbyError marks err as ErrRecoveryConflict when it came from a
// session on a hot standby with SQLSTATE 40001 or 40P01. There these
// codes mean nothing else, whatever the server's lc_messages: a standby
// refuses SERIALIZABLE (0A000) and runs no writes that could fail to
// serialize or deadlock on row locks; the startup process cancels
// queries and walsenders with 40001, and a buffer-pin deadlock with it
// with 40P01.
func standbyError(err error, standby bool) error {
	if err == nil || !standby || errors.Is(err, ErrRecoveryConflict) {
		return err
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == "40001" || pgErr.Code == "40P01") {
		return fmt.Errorf("%w: %w", ErrRecoveryConflict, err)
	}
	return err
}

// recoveryConflictText is the fallback for an error standbyError did not
// see (one of the preflight's, before the session knew it was on a
// standby): the codes with the server's English text, "canceling
// statement due to conflict with recovery" or "terminating connection due
// to conflict with recovery". A server with another lc_messages is
// recognized only through standbyError.
func recoveryConflictText(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40001" || pgErr.Code == "40P01") && strings.Contains(pgErr.Message, "conflict with recovery")
}
