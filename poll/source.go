// Package poll is the polling capture source (capture.Source) for
// databases without logical replication: no slot, no publication, any
// wal_level, and a role that needs only SELECT and UPDATE on the outbox
// table.
//
// A stream claims batches of undispatched rows (the dispatched column is
// NULL) of the aggregates it owns and yields each batch as one
// transaction: Begin, the rows as inserts, Commit, at a synthetic position
// that grows by one per batch. It marks a batch's rows dispatched only
// once the relay's Progress has confirmed the batch, that is once Kafka
// acknowledged every record of it and of every batch before it.
//
// Replicas share the work by aggregate: aggregates hash into Buckets
// buckets, and a replica reads only the buckets it holds by PostgreSQL
// session advisory lock, so one aggregate is read by one replica at a time,
// in order. DESIGN.md (Poll mode) gives the argument that order per
// aggregate holds across crashes and restarts.
package poll

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxrelay/outboxrelay/capture"
	"github.com/outboxrelay/outboxrelay/postgres"
)

// Observer receives poll mode's state changes and pending age for
// metrics, readiness and progress logs; cmd/outboxrelay wires one backed
// by Prometheus. SourceOptions.Observer may be nil. Both methods must be
// cheap; they run on the stream's goroutine.
type Observer interface {
	// State: the source entered capture.StateStreaming (it holds buckets)
	// or capture.StateStandby (it holds none).
	State(state capture.State)
	// Pending: the commit time of the oldest batch not yet confirmed;
	// zero when there is none.
	Pending(oldest time.Time)
}

// SourceOptions are the knobs of a Source besides its configuration. Log
// is required; Observer and Stuck may be nil.
type SourceOptions struct {
	Log      *slog.Logger
	Observer Observer
	// Stuck is told, at every watchdog round, how many rows are
	// undispatched for longer than outbox.poll.stuck.after.ms.
	Stuck func(rows int64)
	// Rebalance is how often a replica recounts the replicas and takes or
	// gives back buckets. Default 1 s.
	Rebalance time.Duration
}

// Source is the polling capture source. It connects to nothing until Open.
type Source struct {
	pg  *postgres.Config
	cfg Config
	opt SourceOptions
}

// NewSource returns a poll source reading the tables of pg's
// table.include.list with cfg.
func NewSource(pg *postgres.Config, cfg Config, opt SourceOptions) (*Source, error) {
	if pg == nil || opt.Log == nil {
		return nil, errors.New("poll.NewSource: the PostgreSQL config and Log are required")
	}
	if opt.Rebalance <= 0 {
		opt.Rebalance = time.Second
	}
	if opt.Observer == nil {
		opt.Observer = nopObserver{}
	}
	return &Source{pg: pg, cfg: cfg, opt: opt}, nil
}

// Retryable: a PostgreSQL connection's rule (postgres.Retryable); a table
// poll mode cannot read is not retried.
func (s *Source) Retryable(err error) bool {
	return !errors.Is(err, ErrTable) && !errors.Is(err, ErrStandby) && postgres.Retryable(err)
}

// Close releases nothing: a stream's locks live on its own connection.
func (s *Source) Close() {}

// Acquire has nothing to wait for: replicas share the work by bucket locks
// (see DESIGN.md, Poll mode).
func (s *Source) Acquire(context.Context) error { return nil }

// Holds is true: poll mode has no failover lock, hence no standby.
func (s *Source) Holds(context.Context) (bool, error) { return true, nil }

// Open connects, reads the outbox tables' columns, counts itself in among
// the replicas and returns a stream starting at confirmed (batch numbers
// continue from it within one process).
func (s *Source) Open(ctx context.Context, known capture.Known) (_ capture.Stream, err error) {
	confirmed := known.Confirmed
	conn, err := s.pg.Connect(ctx)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			conn.Close(context.Background())
		}
	}()
	if err := RefuseStandby(ctx, conn, s.pg); err != nil {
		return nil, err
	}
	names, err := postgres.IncludedTables(ctx, conn, s.pg)
	if err == nil {
		err = postgres.RequireTables(s.pg, names)
	}
	if err != nil {
		return nil, fmt.Errorf("poll mode: %w", err)
	}
	st := &stream{src: s, conn: conn, from: confirmed, next: confirmed + 1, held: map[int]bool{}}
	for _, n := range names {
		t, err := describe(ctx, conn, n, s.cfg)
		if err != nil {
			return nil, err
		}
		if t.Age == "" && s.cfg.StuckAfter > 0 {
			s.opt.Log.Warn("poll mode: the watchdog cannot tell the age of rows: the order column is not a timestamp and there is no timestamp column",
				"table", n, "order_column", s.cfg.Order, "set", "outbox.retention.column")
		}
		st.tables = append(st.tables, t)
	}
	if err := conn.QueryRow(ctx, `SELECT hashtext($1) & 2147483647`, "outboxrelay-poll:"+strings.Join(names, ",")).Scan(&st.lockKey); err != nil {
		return nil, fmt.Errorf("poll mode: lock key: %w", err)
	}
	if err := st.join(ctx); err != nil {
		return nil, err
	}
	s.opt.Log.Info("poll mode: connected", "tables", names, "member", st.member, "batch", s.cfg.Batch,
		"order_column", s.cfg.Order, "dispatched_column", s.cfg.Dispatched, "interval", s.cfg.Interval.String())
	return st, nil
}

func (s *Source) state(st capture.State) { s.opt.Observer.State(st) }

// ErrStandby: poll mode pointed at a hot standby. Not retried.
var ErrStandby = errors.New("poll mode: database.hostname is a hot standby")

// RefuseStandby returns an error wrapping ErrStandby when conn is a hot
// standby: poll mode marks every row it sends (UPDATE … SET dispatched),
// which a read-only standby cannot do. Open and check both ask it, so
// check's line is run's refusal.
func RefuseStandby(ctx context.Context, conn *pgx.Conn, pg *postgres.Config) error {
	var standby bool
	if err := conn.QueryRow(ctx, `SELECT pg_is_in_recovery()`).Scan(&standby); err != nil {
		return fmt.Errorf("poll mode: pg_is_in_recovery(): %w", err)
	}
	if standby {
		return fmt.Errorf("%w (%s, pg_is_in_recovery() is true): poll mode marks each row it sends, and a standby is read-only; point database.hostname at the primary, or decode from the standby with outbox.capture.mode=logical (PostgreSQL 16+)", ErrStandby, pg.Where())
	}
	return nil
}

// nopObserver is the Observer of a source given none.
type nopObserver struct{}

func (nopObserver) State(capture.State) {}
func (nopObserver) Pending(time.Time)   {}
