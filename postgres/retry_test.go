package postgres

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestRetryable pins which PostgreSQL-side failures end the relay and which
// only the session. A regression it guards: a certificate from an unknown
// CA was retried forever instead of stopping with its message. The relay's
// own rules (poison rows, records Kafka refused) are pinned in
// relay.TestRetryable, logical replication's lost failover lock in
// replication.TestRetryable.
func TestRetryable(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"unknown CA", fmt.Errorf("connecting: %w", x509.UnknownAuthorityError{}), false},
		{"wrong password", &pgconn.PgError{Code: "28P01"}, false},
		{"permission denied", &pgconn.PgError{Code: "42501"}, false},
		{"admin shutdown", &pgconn.PgError{Code: "57P01"}, true},
		{"connection refused", &net.OpError{Op: "dial", Err: errors.New("connection refused")}, true},
		{"EOF", fmt.Errorf("receiving WAL: %w", io.EOF), true},
		{"too many connections", &pgconn.PgError{Code: "53300"}, true},
		{"all replication slots in use", fmt.Errorf("creating slot: %w", &pgconn.PgError{Code: "53400"}), false},
		{"unusable TLS file", fmt.Errorf("x: %w", ErrConnSettings), false},
	}
	for _, c := range cases {
		if got := Retryable(c.err); got != c.want {
			t.Errorf("%s: Retryable(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}
