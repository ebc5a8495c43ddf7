package replication

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/outboxrelay/outboxrelay/postgres"
)

// TestRetryable: a lost failover lock ends only the session; every other
// error is a PostgreSQL connection's, decided as postgres.Retryable does
// (its table is postgres.TestRetryable).
func TestRetryable(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"failover lock lost", fmt.Errorf("x: %w", ErrLockLost), true},
		{"EOF", fmt.Errorf("receiving WAL: %w", io.EOF), true},
		{"permission denied", &pgconn.PgError{Code: "42501"}, false},
		{"unusable TLS file", fmt.Errorf("x: %w", postgres.ErrConnSettings), false},
		{"recovery conflict on a standby", fmt.Errorf("receiving WAL: server error: %w", &pgconn.PgError{Code: "40001", Message: "canceling statement due to conflict with recovery"}), true},
		{"serialization failure on a primary", &pgconn.PgError{Code: "40001", Message: "could not serialize access due to concurrent update"}, false},
		{"nil", nil, false},
		{"other", errors.New("no such column"), false},
	}
	for _, c := range cases {
		if got := Retryable(c.err); got != c.want {
			t.Errorf("%s: Retryable(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}
