package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ErrNotThePrimary: database.primary.hostname is not a primary of the
// cluster of database.hostname, the hot standby: a server of another
// cluster (their system identifiers differ), or one of the same cluster
// that is itself in recovery or read-only (a former primary rejoined as a
// standby after a failover, an upstream standby of a cascade). Not
// retried by the preflight, and the janitor deletes nothing there: a
// person must fix the key.
var ErrNotThePrimary = errors.New("database.primary.hostname is not the primary of database.hostname")

// PrimaryConnectTimeout bounds ConnectPrimary's connection, so that a
// blackholed database.primary.hostname costs seconds, not the kernel's
// SYN timeout.
const PrimaryConnectTimeout = 10 * time.Second

// SystemIdentifier is the cluster's system identifier
// (pg_control_system(), which PUBLIC may call unless EXECUTE was revoked):
// a standby made from a base backup keeps its primary's, an unrelated
// cluster has its own.
func SystemIdentifier(ctx context.Context, q Querier) (string, error) {
	var id string
	if err := q.QueryRow(ctx, `SELECT system_identifier::text FROM pg_control_system()`).Scan(&id); err != nil {
		return "", fmt.Errorf("reading the system identifier (pg_control_system()): %w", err)
	}
	return id, nil
}

// VerifyPrimary says whether primary (a connection to
// database.primary.hostname) is a primary of the cluster standby (a
// connection to database.hostname) replicates: the same system identifier,
// and not in recovery. The WAL positions of the two are comparable only
// within one cluster, and only a server out of recovery takes the
// janitor's deletes, the heartbeat and the publication's DDL. It does not
// prove that primary is the server the standby streams from now: a stale
// primary of a split brain (same identifier, out of recovery, on an older
// timeline) passes.
func (c *Config) VerifyPrimary(ctx context.Context, standby, primary Querier) error {
	s, err := SystemIdentifier(ctx, standby)
	if err != nil {
		return fmt.Errorf("database.hostname %s: %w", c.Where(), c.controlRefused(err))
	}
	p, err := SystemIdentifier(ctx, primary)
	if err != nil {
		return fmt.Errorf("database.primary.hostname %s: %w", c.Primary().Where(), c.controlRefused(err))
	}
	if s != p {
		return fmt.Errorf("%w: %s (database.primary.hostname) has system identifier %s, %s (database.hostname) has %s: they are different clusters; set database.primary.hostname and database.primary.port to the server the standby replicates from",
			ErrNotThePrimary, c.Primary().Where(), p, c.Where(), s)
	}
	var recovery bool
	if err := primary.QueryRow(ctx, `SELECT pg_is_in_recovery()`).Scan(&recovery); err != nil {
		return fmt.Errorf("database.primary.hostname %s: pg_is_in_recovery(): %w", c.Primary().Where(), err)
	}
	if recovery {
		return fmt.Errorf("%w: database.primary.hostname %s is itself in recovery (a standby: a former primary rejoined after a failover, or an upstream standby), so it cannot take the janitor's deletes, heartbeat.action.query or the publication's DDL; set database.primary.hostname and database.primary.port to the current primary",
			ErrNotThePrimary, c.Primary().Where())
	}
	return nil
}

// controlRefused adds the fix to a refused pg_control_system() (SQLSTATE
// 42501: EXECUTE revoked from PUBLIC, as some platforms do).
func (c *Config) controlRefused(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42501" {
		return fmt.Errorf("%w; the relay compares the system identifiers of database.hostname and database.primary.hostname: run GRANT EXECUTE ON FUNCTION pg_control_system() TO %s; on the primary (it replicates to the standby)", err, QuoteIdent(c.User))
	}
	return err
}

// readOnlyRefused explains pgx's "read only connection", the error of
// target_session_attrs=read-write (which Primary's connections ask for)
// on a server whose transaction_read_only is on, as ErrNotThePrimary.
func (c *Config) readOnlyRefused(err error) error {
	if !c.readWrite || !errors.Is(err, pgconn.ErrReadOnlyConnection) {
		return err
	}
	return fmt.Errorf("%w: database.primary.hostname %s is read-only (transaction_read_only is on: it is in recovery, a standby such as a former primary rejoined after a failover, or it has default_transaction_read_only = on), so it cannot take the janitor's deletes, heartbeat.action.query or the publication's DDL; set database.primary.hostname and database.primary.port to the current primary: %w",
		ErrNotThePrimary, c.Where(), err)
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
