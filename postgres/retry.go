package postgres

import (
	"errors"
	"io"
	"net"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/outboxrelay/outboxrelay/internal/certerr"
)

// Retryable decides whether an error of a PostgreSQL connection ends the
// relay or only this session: network failures and server shutdowns are
// retried; configuration, permission and data errors are not. Each capture
// source asks it (through its Source.Retryable, with its own errors first)
// after the relay's own rules, which stop at a poison row or a record
// Kafka refused (see relay.retryable).
func Retryable(err error) bool {
	if err == nil {
		return false
	}
	// ErrNotThePrimary before the connection's error it may wrap: a
	// database.primary.hostname that is read-only refuses the next
	// connection the same way.
	if errors.Is(err, ErrConnSettings) || errors.Is(err, ErrAuthMethod) || errors.Is(err, ErrNotThePrimary) {
		return false
	}
	// A certificate that does not verify will not verify on the next try.
	if certerr.Failed(err) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code[:2] {
		case "08", "57", "53", "58": // connection, operator intervention, resources, system
			// Not a dropped database, nor every replication slot in use
			// (53400): a person must act.
			return pgErr.Code != "57P04" && pgErr.Code != "53400"
		}
		return pgErr.Code == "55006" // object in use: our own old walsender still exits
	}
	var netErr net.Error
	if errors.As(err, &netErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return true
	}
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) {
		// A refused or reset connection is retried; bad credentials are not.
		var inner *pgconn.PgError
		return !errors.As(connectErr, &inner)
	}
	return pgconn.SafeToRetry(err)
}
