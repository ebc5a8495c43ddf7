package poll

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/outboxrelay/outboxrelay/capture"
)

// Pipelining: a replica keeps at most maxPending batches claimed and not
// yet marked; a claim skips the pending rows by id (see claimSQL). Every
// Rebalance it stops claiming until nothing is pending, then recounts the
// replicas and takes or gives back buckets.
const (
	maxPending = 8
	ackPoll    = 10 * time.Millisecond // how often pending batches are checked while in flight
	watchEvery = 30 * time.Second      // the stuck-row watchdog's period
)

// batch is a claimed batch: yielded as one transaction at position n.
type batch struct {
	n   capture.LSN
	t   *table
	ids []string // event ids, as text
}

// claimed is the batch being yielded: its rows as text.
type claimed struct {
	b      *batch
	fields []pgconn.FieldDescription
	rows   [][][]byte
	step   int // 0 Begin, 1..len(rows) rows, then Commit
	at     time.Time
}

// stream is one session of the poll source (capture.Stream); one goroutine,
// the relay's session, calls its methods and owns its connection.
type stream struct {
	src     *Source
	conn    *pgx.Conn
	tables  []*table
	from    capture.LSN
	next    capture.LSN // the next batch's position
	p       capture.Progress
	lockKey int32
	member  int
	held    map[int]bool
	buckets []int // held, sorted: the claim's $1

	cur      *claimed
	pending  []*batch // claimed, not yet marked dispatched; in position order
	turn     int      // the table polled first next time
	idleWait time.Duration

	lastBalance time.Time
	lastWatch   time.Time
	nullable    map[*table]map[string]bool
	ev          capture.Event
	row         capture.Row
}

func (s *stream) From() capture.LSN { return s.from }

// Start records the relay's progress and takes a first share of buckets.
func (s *stream) Start(ctx context.Context, p capture.Progress) error {
	s.p = p
	s.lastWatch = time.Now()
	s.lastBalance = time.Now()
	return s.rebalance(ctx)
}

// Next yields the next event: the rest of the batch being yielded, or the
// next batch claimed; between polls it marks confirmed batches dispatched,
// rebalances buckets and runs the watchdog.
func (s *stream) Next(ctx context.Context) (*capture.Event, error) {
	for {
		if s.cur != nil {
			return s.yield(), nil
		}
		if err := s.tick(ctx); err != nil {
			return nil, err
		}
		found, err := s.claim(ctx)
		if err != nil {
			return nil, err
		}
		if found {
			s.idleWait = 0
			continue
		}
		wait := ackPoll
		if len(s.pending) == 0 {
			s.idleWait = min(max(2*s.idleWait, ackPoll), s.src.cfg.Interval)
			wait = s.idleWait
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// tick does the work between two polls.
func (s *stream) tick(ctx context.Context) error {
	if err := s.markConfirmed(ctx); err != nil {
		return err
	}
	s.src.opt.Observer.Pending(s.p.Oldest())
	if len(s.pending) == 0 {
		if s.rebalanceDue() {
			s.lastBalance = time.Now()
			if err := s.rebalance(ctx); err != nil {
				return err
			}
		}
	}
	if s.src.cfg.StuckAfter > 0 && time.Since(s.lastWatch) >= min(watchEvery, s.src.cfg.StuckAfter) {
		s.lastWatch = time.Now()
		return s.watch(ctx)
	}
	return nil
}

// rebalanceDue: a rebalance is due, so claims wait until nothing is pending.
func (s *stream) rebalanceDue() bool { return time.Since(s.lastBalance) >= s.src.opt.Rebalance }

// canClaim: buckets held, room in the pipeline, and no rebalance waiting
// for the pipeline to drain.
func (s *stream) canClaim() bool {
	if len(s.buckets) == 0 || len(s.pending) >= maxPending {
		return false
	}
	return len(s.pending) == 0 || !s.rebalanceDue()
}

// claim reads the next batch of the tables in turn; false when none has
// rows for this replica now.
func (s *stream) claim(ctx context.Context) (bool, error) {
	if !s.canClaim() {
		return false, nil
	}
	for i := range s.tables {
		t := s.tables[(s.turn+i)%len(s.tables)]
		c, err := s.read(ctx, t)
		if err != nil {
			return false, err
		}
		if c != nil {
			s.turn = (s.turn + i + 1) % len(s.tables)
			s.cur = c
			s.pending = append(s.pending, c.b)
			return true, nil
		}
	}
	return false, nil
}

// read runs the claim query on one table; nil when it found nothing.
func (s *stream) read(ctx context.Context, t *table) (*claimed, error) {
	params := [][]byte{[]byte(intArray(s.buckets)), []byte(fmt.Sprint(s.src.cfg.Batch))}
	var skip []string
	for _, b := range s.pending {
		if b.t == t {
			skip = append(skip, b.ids...)
		}
	}
	if len(skip) > 0 {
		params = append(params, []byte(textArray(skip)))
	}
	at := time.Now()
	res := s.conn.PgConn().ExecParams(ctx, t.claimSQL(len(skip) > 0), params, nil, nil, nil).Read()
	if res.Err != nil {
		return nil, fmt.Errorf("poll mode: claiming rows of %s: %w", t.Name, res.Err)
	}
	if len(res.Rows) == 0 {
		return nil, nil
	}
	idIdx := -1
	for i, f := range res.FieldDescriptions {
		if f.Name == s.src.cfg.IDColumn {
			idIdx = i
		}
	}
	b := &batch{n: s.next, t: t, ids: make([]string, 0, len(res.Rows))}
	for _, r := range res.Rows {
		if r[idIdx] == nil {
			return nil, fmt.Errorf("%w %s: a row has a NULL event id (%s, table.field.event.id): poll mode marks rows dispatched by it; make it the primary key",
				ErrTable, t.Name, s.src.cfg.IDColumn)
		}
		b.ids = append(b.ids, string(r[idIdx]))
	}
	s.next++
	if err := s.loadNullable(ctx, t); err != nil {
		return nil, err
	}
	return &claimed{b: b, fields: res.FieldDescriptions, rows: res.Rows, at: at}, nil
}

// loadNullable reads, once per table and session, which columns accept
// NULL (capture.Column.Nullable, as the logical source reports it).
func (s *stream) loadNullable(ctx context.Context, t *table) error {
	if s.nullable[t] != nil {
		return nil
	}
	cols, err := columns(ctx, s.conn, t.Name)
	if err != nil {
		return err
	}
	m := map[string]bool{}
	for name, c := range cols {
		m[name] = !c.NotNull
	}
	if s.nullable == nil {
		s.nullable = map[*table]map[string]bool{}
	}
	s.nullable[t] = m
	return nil
}

// yield returns the next event of the batch being yielded.
func (s *stream) yield() *capture.Event {
	c := s.cur
	defer func() { c.step++ }()
	switch {
	case c.step == 0:
		s.bindRow(c)
		// The record timestamp falls back to this (the claim's time):
		// polling cannot know the commit time.
		s.ev = capture.Event{Kind: capture.KindBegin, LSN: c.b.n, CommitTime: c.at}
	case c.step <= len(c.rows):
		for i, v := range c.rows[c.step-1] {
			s.row.Columns[i].Text = v
			s.row.Columns[i].Null = v == nil
		}
		s.row.Position = c.step
		s.ev = capture.Event{Kind: capture.KindRow, LSN: c.b.n, Row: &s.row}
	default:
		s.cur = nil
		s.ev = capture.Event{Kind: capture.KindCommit, LSN: c.b.n, EndLSN: c.b.n}
	}
	return &s.ev
}

// bindRow shapes the reused row for the batch's table, as the logical
// source does: an insert, columns in table order with type and nullability.
func (s *stream) bindRow(c *claimed) {
	null := s.nullable[c.b.t]
	s.row = capture.Row{Op: capture.OpCreate, Table: c.b.t.Name, Columns: make([]capture.Column, len(c.fields))}
	for i, f := range c.fields {
		s.row.Columns[i] = capture.Column{Name: f.Name, OID: f.DataTypeOID, Nullable: null[f.Name]}
	}
}

// markConfirmed marks dispatched the rows of every pending batch the relay
// confirmed: Kafka acknowledged them and everything before them.
func (s *stream) markConfirmed(ctx context.Context) error {
	if s.p == nil { // closed before Start
		return nil
	}
	confirmed := s.p.Confirmed()
	n := 0
	for n < len(s.pending) && s.pending[n].n <= confirmed && s.pending[n] != s.curBatch() {
		n++
	}
	if n == 0 {
		return nil
	}
	byTable := map[*table][]string{}
	for _, b := range s.pending[:n] {
		byTable[b.t] = append(byTable[b.t], b.ids...)
	}
	for t, ids := range byTable {
		if _, err := s.conn.Exec(ctx, t.markSQL(), textArray(ids)); err != nil {
			return fmt.Errorf("poll mode: marking %d rows of %s dispatched (%s): %w", len(ids), t.Name, s.src.cfg.Dispatched, err)
		}
	}
	clear(s.pending[:n])
	s.pending = s.pending[n:]
	return nil
}

func (s *stream) curBatch() *batch {
	if s.cur == nil {
		return nil
	}
	return s.cur.b
}

// watch counts the rows undispatched for longer than
// outbox.poll.stuck.after.ms (all replicas' buckets) and names the oldest.
func (s *stream) watch(ctx context.Context) error {
	var total int64
	for _, t := range s.tables {
		if t.Age == "" {
			continue
		}
		var n int64
		var oldest *string
		if err := s.conn.QueryRow(ctx, t.stuckSQL(), s.src.cfg.StuckAfter.String()).Scan(&n, &oldest); err != nil {
			return fmt.Errorf("poll mode: counting stuck rows of %s: %w", t.Name, err)
		}
		if n > 0 && oldest != nil {
			s.src.opt.Log.Warn("poll mode: rows still undispatched after "+KeyStuckAfter, "table", t.Name, "rows", n,
				"after", s.src.cfg.StuckAfter.String(), "lowest_event_id", *oldest,
				"hint", "a replica is down or slow, Kafka refuses them, or the relay stopped at a poison row")
		}
		total += n
	}
	if s.src.opt.Stuck != nil {
		s.src.opt.Stuck(total)
	}
	return nil
}

// KeepAlive marks what was confirmed while the relay waits for budget.
func (s *stream) KeepAlive(ctx context.Context) error { return s.markConfirmed(ctx) }

// Origin is unknown: batch numbers name no server or timeline, and there
// is no slot to resume (nothing is recorded outside the tables).
func (s *stream) Origin() (string, bool) { return "", false }

// SnapshotDone is never due: poll mode has no snapshot (every undispatched
// row is read anyway).
func (s *stream) SnapshotDone(context.Context) error {
	return fmt.Errorf("poll mode has no initial snapshot")
}

// Close marks what was confirmed and closes the connection, which releases
// every lock of this replica.
func (s *stream) Close(ctx context.Context, _ capture.Ending) error {
	s.cur = nil
	err := s.markConfirmed(ctx)
	s.conn.Close(context.Background())
	return err
}
