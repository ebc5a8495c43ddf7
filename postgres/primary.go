package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrNotThePrimary: database.primary.hostname is a server of another
// cluster than database.hostname, the hot standby (their system
// identifiers differ). Not retried: a person must fix the key.
var ErrNotThePrimary = errors.New("database.primary.hostname is not the primary of database.hostname")

// PrimaryConnectTimeout bounds ConnectPrimary's connection, so that a
// blackholed database.primary.hostname costs seconds, not the kernel's
// SYN timeout.
const PrimaryConnectTimeout = 10 * time.Second

// SystemIdentifier is the cluster's system identifier
// (pg_control_system(), which any role may call): a standby made from a
// base backup keeps its primary's, an unrelated cluster has its own.
func SystemIdentifier(ctx context.Context, q Querier) (string, error) {
	var id string
	if err := q.QueryRow(ctx, `SELECT system_identifier::text FROM pg_control_system()`).Scan(&id); err != nil {
		return "", fmt.Errorf("reading the system identifier (pg_control_system()): %w", err)
	}
	return id, nil
}

// VerifyPrimary says whether primary (a connection to
// database.primary.hostname) belongs to the cluster standby (a connection
// to database.hostname) replicates: the same system identifier. The WAL
// positions of the two are comparable only then; the janitor's rule, the
// heartbeat and the publication's DDL rely on it.
func (c *Config) VerifyPrimary(ctx context.Context, standby, primary Querier) error {
	s, err := SystemIdentifier(ctx, standby)
	if err != nil {
		return fmt.Errorf("database.hostname %s: %w", c.Where(), err)
	}
	p, err := SystemIdentifier(ctx, primary)
	if err != nil {
		return fmt.Errorf("database.primary.hostname %s: %w", c.Primary().Where(), err)
	}
	if s != p {
		return fmt.Errorf("%w: %s (database.primary.hostname) has system identifier %s, %s (database.hostname) has %s: they are different clusters; set database.primary.hostname and database.primary.port to the server the standby replicates from",
			ErrNotThePrimary, c.Primary().Where(), p, c.Where(), s)
	}
	return nil
}

// ConnectPrimary connects to database.primary.hostname (Primary, which
// must be set), within PrimaryConnectTimeout, and checks with
// VerifyPrimary that it is the primary of standby's cluster: an error
// wrapping ErrNotThePrimary when it is not.
func (c *Config) ConnectPrimary(ctx context.Context, standby Querier) (*pgx.Conn, error) {
	p := c.Primary()
	if p == nil {
		return nil, errors.New("database.primary.hostname is not set")
	}
	cctx, cancel := context.WithTimeout(ctx, PrimaryConnectTimeout)
	defer cancel()
	conn, err := p.Connect(cctx)
	if err != nil {
		return nil, fmt.Errorf("database.primary.hostname: %w", err)
	}
	if err := c.VerifyPrimary(ctx, standby, conn); err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	return conn, nil
}
