package postgres

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// idQuerier answers SystemIdentifier's query with id, or err.
type idQuerier struct {
	id  string
	err error
}

func (q idQuerier) QueryRow(context.Context, string, ...any) pgx.Row { return q }

func (q idQuerier) Scan(dest ...any) error {
	if q.err != nil {
		return q.err
	}
	*dest[0].(*string) = q.id
	return nil
}

// TestVerifyPrimary: i30-review finding 7. database.primary.hostname was
// never checked to be the standby's primary, and the janitor deleted on it
// by comparing WAL positions of two clusters. VerifyPrimary accepts the
// same system identifier, and refuses another naming both hosts, both
// identifiers and the key.
func TestVerifyPrimary(t *testing.T) {
	cfg := &Config{Host: "standby", Port: 5433, Ports: []int{5433}, DBName: "d", PrimaryHost: "primary", PrimaryPort: 5432}
	read := errors.New("permission denied for function pg_control_system")
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
