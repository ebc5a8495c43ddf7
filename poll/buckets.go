package poll

import (
	"context"
	"fmt"
	"sort"

	"github.com/jackc/pgx/v5"

	"github.com/outboxrelay/outboxrelay/capture"
)

// The advisory locks of poll mode are two-key session locks
// (pg_try_advisory_lock(key, n)): key is derived from the outbox tables'
// names; n in [0, Buckets) is a bucket of aggregates, n in [Buckets,
// Buckets+maxMembers) a replica's membership, which lets replicas count
// each other in pg_locks. A session lock lasts exactly as long as the
// connection: a replica that dies, or loses its connection, gives up its
// buckets at once, without anyone's help.
const (
	joinSQL = `SELECT m FROM generate_series($2::int, $3::int) m WHERE pg_try_advisory_lock($1::int, m) LIMIT 1`
	// Advisory locks are per database.
	countSQL = `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 2
		AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
		AND classid = $1::int::oid AND objid >= $2::int::oid`
	// The filter runs row by row under the LIMIT: at most $3 locks are taken.
	takeSQL    = `SELECT b FROM unnest($2::int[]) b WHERE pg_try_advisory_lock($1::int, b) LIMIT $3::int`
	releaseSQL = `SELECT pg_advisory_unlock($1::int, b) FROM unnest($2::int[]) b`
)

// join takes the first free membership lock.
func (s *stream) join(ctx context.Context) error {
	var m int32
	err := s.conn.QueryRow(ctx, joinSQL, s.lockKey, Buckets, Buckets+maxMembers-1).Scan(&m)
	if err == pgx.ErrNoRows {
		return fmt.Errorf("poll mode: more than %d replicas for these outbox tables", maxMembers)
	}
	if err != nil {
		return fmt.Errorf("poll mode: joining the replicas (advisory lock %d): %w", s.lockKey, err)
	}
	s.member = int(m) - Buckets
	return nil
}

// rebalance counts the replicas and takes or gives back buckets toward a
// fair share. It runs only when nothing claimed is pending (every row this
// replica read is marked dispatched), so a bucket changes hands with no
// record of it in flight here.
func (s *stream) rebalance(ctx context.Context) error {
	var members int
	if err := s.conn.QueryRow(ctx, countSQL, s.lockKey, Buckets).Scan(&members); err != nil {
		return fmt.Errorf("poll mode: counting the replicas: %w", err)
	}
	share := fairShare(members)
	before := len(s.held)
	switch {
	case len(s.held) > share:
		var give []int
		for b := range s.held {
			give = append(give, b)
		}
		sort.Ints(give)
		give = give[share:]
		if _, err := s.conn.Exec(ctx, releaseSQL, s.lockKey, give); err != nil {
			return fmt.Errorf("poll mode: giving back buckets: %w", err)
		}
		for _, b := range give {
			delete(s.held, b)
		}
	case len(s.held) < share:
		rows, err := s.conn.Query(ctx, takeSQL, s.lockKey, candidates(s.held, s.member), share-len(s.held))
		if err != nil {
			return fmt.Errorf("poll mode: taking buckets: %w", err)
		}
		var b int
		if _, err := pgx.ForEachRow(rows, []any{&b}, func() error { s.held[b] = true; return nil }); err != nil {
			return fmt.Errorf("poll mode: taking buckets: %w", err)
		}
	}
	if len(s.held) != before {
		s.src.opt.Log.Info("poll mode: buckets", "held", len(s.held), "of", Buckets, "replicas", members, "member", s.member)
		s.buckets = nil
		for b := range s.held {
			s.buckets = append(s.buckets, b)
		}
		sort.Ints(s.buckets)
	}
	if len(s.held) > 0 {
		s.src.state(capture.StateStreaming)
	} else {
		s.src.state(capture.StateStandby)
	}
	return nil
}
