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

// TestStandbyError pins i30 review finding 8: a recovery conflict was
// recognized by the server's English message only, so on a standby with
// lc_messages=de_DE a cancelled snapshot query ended the relay (exit 1)
// instead of the session. On a standby 40001 and 40P01 are recovery
// conflicts whatever the text; on a primary they are what they say.
func TestStandbyError(t *testing.T) {
	german := &pgconn.PgError{Code: "40001", Message: "storniere Anfrage wegen Konflikt mit der Wiederherstellung"}
	cases := []struct {
		name      string
		err       error
		standby   bool
		conflict  bool // wrapped as ErrRecoveryConflict
		retryable bool
	}{
		{"translated 40001 on a standby", fmt.Errorf("snapshot: %w", german), true, true, true},
		{"40P01 buffer pin on a standby", &pgconn.PgError{Code: "40P01", Message: "Verklemmung"}, true, true, true},
		{"walsender terminated on a standby", fmt.Errorf("receiving WAL: server error: %w", &pgconn.PgError{Code: "40001", Message: "terminating connection due to conflict with recovery"}), true, true, true},
		{"translated 40001 on a primary", german, false, false, false},
		{"English text on a primary session: the fallback", &pgconn.PgError{Code: "40001", Message: "canceling statement due to conflict with recovery"}, false, false, true},
		{"other code on a standby", &pgconn.PgError{Code: "42501", Message: "permission denied"}, true, false, false},
		{"not a server error", errors.New("no such column"), true, false, false},
		{"nil", nil, true, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := standbyError(c.err, c.standby)
			if !errors.Is(got, c.err) {
				t.Errorf("standbyError(%v) = %v; lost the cause", c.err, got)
			}
			if errors.Is(got, ErrRecoveryConflict) != c.conflict {
				t.Errorf("standbyError(%v, %v) = %v; ErrRecoveryConflict %v, want %v", c.err, c.standby, got, !c.conflict, c.conflict)
			}
			if Retryable(got) != c.retryable {
				t.Errorf("Retryable(%v) = %v, want %v", got, !c.retryable, c.retryable)
			}
			if again := standbyError(got, c.standby); c.conflict && again != got {
				t.Errorf("wrapped twice: %v", again)
			}
		})
	}
}
