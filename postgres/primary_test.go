package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// idQuerier answers SystemIdentifier's query with id, or err, and
// pg_is_in_recovery() with recovery.
type idQuerier struct {
	id       string
	err      error
	recovery bool
}

func (q idQuerier) QueryRow(context.Context, string, ...any) pgx.Row { return q }

func (q idQuerier) Scan(dest ...any) error {
	if q.err != nil {
		return q.err
	}
	switch d := dest[0].(type) {
	case *string:
		*d = q.id
	case *bool:
		*d = q.recovery
	}
	return nil
}

// TestVerifyPrimary: i30-review finding 7. database.primary.hostname was
// never checked to be the standby's primary, and the janitor deleted on it
// by comparing WAL positions of two clusters. VerifyPrimary accepts the
// same system identifier, and refuses another naming both hosts, both
// identifiers and the key.
func TestVerifyPrimary(t *testing.T) {
	cfg := &Config{Host: "standby", Port: 5433, Ports: []int{5433}, DBName: "d", User: "relay", PrimaryHost: "primary", PrimaryPort: 5432}
	read := errors.New("permission denied for function pg_control_system")
	revoked := &pgconn.PgError{Code: "42501", Message: "permission denied for function pg_control_system"}
	cases := []struct {
		name             string
		standby, primary idQuerier
		is               error
		want             []string
	}{
		{"same cluster", idQuerier{id: "7716569365406531930"}, idQuerier{id: "7716569365406531930"}, nil, nil},
		{"another cluster", idQuerier{id: "7716569365406531930"}, idQuerier{id: "7716569396739281427"}, ErrNotThePrimary,
			[]string{"primary:5432/d (database.primary.hostname) has system identifier 7716569396739281427", "standby:5433/d (database.hostname) has 7716569365406531930", "set database.primary.hostname and database.primary.port"}},
		{"unreadable on the standby", idQuerier{err: read}, idQuerier{id: "1"}, read, []string{"database.hostname standby:5433/d", "pg_control_system()"}},
		{"unreadable on the primary", idQuerier{id: "1"}, idQuerier{err: read}, read, []string{"database.primary.hostname primary:5432/d"}},
		// s36 review finding 3: a "primary" of the same cluster in
		// recovery (the old primary rejoined as a standby) passed.
		{"the primary in recovery", idQuerier{id: "7716569365406531930"}, idQuerier{id: "7716569365406531930", recovery: true}, ErrNotThePrimary,
			[]string{"database.primary.hostname primary:5432/d is itself in recovery", "set database.primary.hostname and database.primary.port to the current primary"}},
		// s36 review finding 10: a revoked pg_control_system() read as
		// "cannot be reached", with no fix.
		{"pg_control_system() revoked on the primary", idQuerier{id: "1"}, idQuerier{err: revoked}, revoked,
			[]string{"database.primary.hostname primary:5432/d", "GRANT EXECUTE ON FUNCTION pg_control_system() TO relay"}},
		{"pg_control_system() revoked on the standby", idQuerier{err: revoked}, idQuerier{id: "1"}, revoked,
			[]string{"database.hostname standby:5433/d", "GRANT EXECUTE ON FUNCTION pg_control_system() TO relay"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := cfg.VerifyPrimary(context.Background(), c.standby, c.primary)
			if c.is == nil {
				if err != nil {
					t.Fatalf("VerifyPrimary: %v; want nil", err)
				}
				return
			}
			if !errors.Is(err, c.is) {
				t.Fatalf("VerifyPrimary: %v; want %v", err, c.is)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not say %q", err, w)
				}
			}
		})
	}
}

// TestReadOnlyRefused: s36 review finding 3. database.primary.hostname's
// connection asks for target_session_attrs=read-write; a server in
// recovery failed it with pgx's bare "read only connection". The error
// is ErrNotThePrimary now, names the key, why, and the fix; other
// configurations' errors and other errors are left alone.
func TestReadOnlyRefused(t *testing.T) {
	standby := &Config{Host: "standby", Port: 5433, Ports: []int{5433}, DBName: "d", PrimaryHost: "old-primary", PrimaryPort: 5432}
	readOnly := fmt.Errorf("failed to connect: %w", pgconn.ErrReadOnlyConnection)
	err := standby.Primary().readOnlyRefused(readOnly)
	if !errors.Is(err, ErrNotThePrimary) || !errors.Is(err, pgconn.ErrReadOnlyConnection) {
		t.Fatalf("readOnlyRefused: %v; want ErrNotThePrimary wrapping pgconn.ErrReadOnlyConnection", err)
	}
	if Retryable(err) {
		t.Errorf("Retryable(%v) = true; want false: the next connection is refused the same way", err)
	}
	for _, w := range []string{"database.primary.hostname old-primary:5432/d is read-only", "in recovery", "set database.primary.hostname and database.primary.port to the current primary"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q does not say %q", err, w)
		}
	}
	if err := standby.readOnlyRefused(readOnly); err != readOnly {
		t.Errorf("database.hostname's own configuration: %v; want the error unchanged", err)
	}
	other := errors.New("connection refused")
	if err := standby.Primary().readOnlyRefused(other); err != other {
		t.Errorf("another error: %v; want it unchanged", err)
	}
}
