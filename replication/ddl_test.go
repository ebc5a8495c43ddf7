package replication

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestDDLFailed: s36 review finding 4. Every error of the publication's
// DDL on the primary, and of the wait for the standby's replay, was
// formatted with %v into ErrPublication: a primary restart, a dropped
// connection or a recovery conflict stopped the relay ("create it as an
// administrator") instead of retrying the session. Only a refusal of the
// statement that no retry mends is ErrPublication now; the rest keeps its
// cause, and Retryable sees it.
func TestDDLFailed(t *testing.T) {
	live := context.Background()
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	refused := func(err error) error { return fmt.Errorf("%w: refused: %v", ErrPublication, err) }
	conflict := &pgconn.PgError{Code: "40001", Message: "canceling statement due to conflict with recovery"}
	cases := []struct {
		name        string
		ctx         context.Context
		err         error
		publication bool // ErrPublication: stops the relay
		retryable   bool
	}{
		{"privilege refused", live, &ddlRefusal{err: &pgconn.PgError{Code: "42501"}}, true, false},
		{"table missing", live, &ddlRefusal{err: &pgconn.PgError{Code: "42P01"}}, true, false},
		{"primary shutting down during the DDL", live, &ddlRefusal{err: &pgconn.PgError{Code: "57P01"}}, false, true},
		{"connection lost during the DDL", live, &ddlRefusal{err: io.ErrUnexpectedEOF}, false, true},
		{"SET on a lost connection", live, fmt.Errorf("SET synchronous_commit = local: %w", io.EOF), false, true},
		{"replay wait cancelled by a recovery conflict", live, fmt.Errorf("waiting: %w", standbyError(conflict, true)), false, true},
		{"replay wait cancelled, another lc_messages", live, fmt.Errorf("waiting: %w", standbyError(&pgconn.PgError{Code: "40001", Message: "Abbruch"}, true)), false, true},
		{"primary unreachable", live, fmt.Errorf("x: %w: %w", errPrimaryUnreachable, io.EOF), false, true},
		{"stopped (SIGTERM) during the wait", ended, fmt.Errorf("waiting: %w", context.Canceled), false, false},
		{"stopped during the DDL", ended, &ddlRefusal{err: context.Canceled}, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := ddlFailed(c.ctx, c.err, "CREATE PUBLICATION p", " on the primary", refused)
			if got := errors.Is(err, ErrPublication); got != c.publication {
				t.Fatalf("ddlFailed: %v; ErrPublication %v, want %v", err, got, c.publication)
			}
			if got := Retryable(err); got != c.retryable {
				t.Errorf("Retryable(%v) = %v, want %v", err, got, c.retryable)
			}
			if c.ctx.Err() != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("%v does not wrap context.Canceled", err)
			}
		})
	}
}
