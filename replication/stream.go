package replication

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/outboxrelay/outboxrelay/router"
)

// Sink receives routed records. Send hands one record over and returns
// without waiting for Kafka; ack is called exactly once, from any
// goroutine, when Kafka acknowledged the record (nil) or the record failed
// for good (the relay then stops). Send copies what it keeps: the record's
// buffers belong to the router and are reused for the next row.
type Sink interface {
	Send(ctx context.Context, rec *router.Record, ack func(error)) error
	// Flush waits until every record sent so far is acknowledged.
	Flush(ctx context.Context) error
}

// Poison decides what happens to a poison row: one the router rejects
// (rec is nil), or whose record the sink refused before sending (rec is that
// record, the error wraps ErrRecordRejected). Returning nil means the row
// was dealt with and ack will be called (dead-lettered, or skipped with ack
// called at once); returning an error stops the relay, having confirmed
// everything before the row (errors.tolerance=none).
type Poison func(ctx context.Context, ev *router.Event, rec *router.Record, cause error, ack func(error)) error

// ErrRecordRejected marks a Sink.Send error that condemns the record, not
// the connection (e.g. larger than max.request.size): the row is poison.
var ErrRecordRejected = errors.New("record rejected")

// Options wires a Stream. Router, Sink and Log are required.
type Options struct {
	Config   *Config
	Router   *router.Router
	Sink     Sink
	Log      *slog.Logger
	Observer Observer
	Poison   Poison
	// MaxInFlightRecords and MaxInFlightBytes bound the records handed to
	// the sink and not yet acknowledged (invariant 5). Defaults 10000 and
	// 64 MiB.
	MaxInFlightRecords int
	MaxInFlightBytes   int64
	// ConfirmEvery rate-limits status updates that only report a moved
	// confirmed LSN. Default 100 ms.
	ConfirmEvery time.Duration
	// StandbyPoll is how often a standby instance tries the failover lock,
	// and how often the active one checks the lock's connection. Default 1 s.
	StandbyPoll time.Duration
}

// drainLimit bounds how long a stop waits for the transaction being read
// to end (see session.loop).
const drainLimit = 10 * time.Second

// errStop reports an orderly end of streaming requested by the mode
// (initial_only) rather than by an error.
var errStop = errors.New("stop requested")

// session is one connection's worth of streaming. The goroutine running
// session.run owns conn: it receives, decodes, routes, sends and answers
// the server, and nothing else touches the connection (invariant 3).
type session struct {
	opt    *Options
	cfg    *Config
	log    *slog.Logger
	conn   *pgconn.PgConn // the replication connection
	pg     *pgx.Conn      // an ordinary connection, for catalog lookups
	ck     *Checkpoint
	budget *Budget

	rels *Relations
	// catalog holds what pgoutput does not say about each outbox relation
	// (see relCatalog), read once per Relation message.
	catalog map[uint32]relCatalog
	msg     Message
	ev      router.Event
	records []router.Record
	tx      *Tx // the transaction being decoded, nil between Commit and Begin
	// abandoned: the stop left a transaction half read; its rest is only
	// in the slot, which therefore must not be dropped.
	abandoned bool

	streaming     bool // START_REPLICATION sent: status updates may flow
	lastStatus    time.Time
	lastHeartbeat time.Time
	lastConfirmed pglogrepl.LSN
	serverWALEnd  pglogrepl.LSN
}

// loop receives until ctx ends, the server goes away, or a row or ack
// fails. The receive deadline doubles as the status timer.
//
// A stop (ctx cancelled) between transactions returns at once. In the middle
// of one it first reads on to that transaction's Commit, for at most
// drainLimit, so that the records already sent for it are confirmed and a
// restart does not send them again; past the limit the transaction is
// abandoned and sent again, whole, after the restart.
func (s *session) loop(stop context.Context) error {
	ctx := stop
	for {
		if stop.Err() != nil {
			if s.tx == nil {
				return stop.Err()
			}
			if ctx == stop {
				s.log.Info("stopping: reading to the end of the current transaction first", "lsn", s.tx.FinalLSN().String(), "limit", drainLimit.String())
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(context.Background(), drainLimit)
				defer cancel()
			}
			if ctx.Err() != nil {
				s.log.Warn("stopping: the current transaction did not end in time; it will be sent again, whole, after a restart", "lsn", s.tx.FinalLSN().String())
				return stop.Err()
			}
		}
		if err := s.ck.Err(); err != nil {
			return err
		}
		if err := s.maybeStatus(ctx, false); err != nil {
			return err
		}
		if err := s.maybeHeartbeat(ctx); err != nil {
			return err
		}
		deadline := s.lastStatus.Add(s.cfg.StatusInterval)
		if s.cfg.HeartbeatInterval > 0 {
			if hb := s.lastHeartbeat.Add(s.cfg.HeartbeatInterval); hb.Before(deadline) {
				deadline = hb
			}
		}
		// While records are in flight, wake up often to report acks as
		// they arrive, so the slot follows Kafka closely.
		if s.ck.InFlight() > 0 || s.ck.Confirmed() != s.lastConfirmed {
			if soon := time.Now().Add(s.opt.ConfirmEvery); soon.Before(deadline) {
				deadline = soon
			}
		}
		rctx, cancel := context.WithDeadline(ctx, deadline)
		raw, err := s.conn.ReceiveMessage(rctx)
		cancel()
		if err != nil {
			if stop.Err() != nil || pgconn.Timeout(err) {
				continue // the top of the loop decides
			}
			return fmt.Errorf("receiving WAL: %w", err)
		}
		switch m := raw.(type) {
		case *pgproto3.CopyData:
			if err := s.copyData(ctx, m.Data); err != nil {
				return err
			}
		case *pgproto3.ErrorResponse:
			return fmt.Errorf("receiving WAL: server error: %w", pgconn.ErrorResponseToPgError(m))
		case *pgproto3.CopyDone:
			return fmt.Errorf("receiving WAL: server ended the stream (CopyDone)")
		}
	}
}

func (s *session) copyData(ctx context.Context, data []byte) error {
	if len(data) == 0 {
		return nil
	}
	switch data[0] {
	case pglogrepl.PrimaryKeepaliveMessageByteID:
		ka, err := pglogrepl.ParsePrimaryKeepaliveMessage(data[1:])
		if err != nil {
			return fmt.Errorf("parsing keepalive: %w", err)
		}
		s.serverWALEnd = ka.ServerWALEnd
		// Invariant 2: the server's WAL end may be confirmed only when no
		// transaction is being decoded and nothing is in flight; then all
		// WAL up to it is either published or not ours.
		if s.tx == nil {
			s.ck.Idle(ka.ServerWALEnd)
		}
		if s.opt.Observer != nil {
			s.opt.Observer.Received(s.ck.Confirmed(), ka.ServerWALEnd)
		}
		return s.maybeStatus(ctx, ka.ReplyRequested)
	case pglogrepl.XLogDataByteID:
		xld, err := pglogrepl.ParseXLogData(data[1:])
		if err != nil {
			return fmt.Errorf("parsing XLogData: %w", err)
		}
		if xld.ServerWALEnd > s.serverWALEnd {
			s.serverWALEnd = xld.ServerWALEnd
			if s.opt.Observer != nil {
				s.opt.Observer.Received(s.ck.Confirmed(), xld.ServerWALEnd)
			}
		}
		return s.walData(ctx, xld.WALStart, xld.WALData)
	}
	return nil
}

// walData handles one pgoutput message.
func (s *session) walData(ctx context.Context, at pglogrepl.LSN, frame []byte) error {
	if err := Decode(frame, &s.msg); err != nil {
		return fmt.Errorf("decoding pgoutput at %s: %w", at, err)
	}
	m := &s.msg
	switch m.Type {
	case MessageBegin:
		tx, err := s.ck.BeginAt(m.Begin.FinalLSN, m.Begin.CommitTime)
		if err != nil {
			return fmt.Errorf("pgoutput Begin at %s: %w", at, err)
		}
		s.tx = tx
		s.ev.CommitLSN = uint64(m.Begin.FinalLSN)
		s.ev.CommitTime = m.Begin.CommitTime
		s.ev.Position = 0
	case MessageCommit:
		if s.tx == nil {
			return fmt.Errorf("decoding pgoutput at %s: Commit without Begin", at)
		}
		if err := s.tx.Commit(m.Commit.CommitLSN, m.Commit.EndLSN); err != nil {
			return fmt.Errorf("pgoutput Commit at %s: %w", at, err)
		}
		s.tx = nil
	case MessageRelation:
		rel := s.rels.Put(&m.Relation)
		if s.cfg.Includes(rel.Namespace, rel.Name) {
			info, err := readRelCatalog(ctx, s.pg, rel)
			if err != nil {
				return err
			}
			s.catalog[rel.ID] = info
		}
	case MessageInsert:
		return s.row(ctx, at, router.OpCreate, m.Insert.RelationID, &m.Insert.New, nil, OldTupleNone)
	case MessageUpdate:
		var old *Tuple
		if m.Update.OldKind != OldTupleNone {
			old = &m.Update.Old
		}
		return s.row(ctx, at, router.OpUpdate, m.Update.RelationID, &m.Update.New, old, m.Update.OldKind)
	case MessageDelete:
		return s.row(ctx, at, router.OpDelete, m.Delete.RelationID, &m.Delete.Old, nil, OldTupleNone)
	case MessageTruncate:
		s.skip("truncate")
	case MessageLogical:
		s.skip("logical_message")
	case MessageOrigin, MessageDataType:
		// Origin names a replication origin; Type describes a custom type
		// by name. Neither affects routing of text-format values.
	}
	return nil
}

func (s *session) skip(reason string) {
	if s.opt.Observer != nil {
		s.opt.Observer.Skipped(reason)
	}
}

// row routes one decoded row of any table.
func (s *session) row(ctx context.Context, at pglogrepl.LSN, op router.Op, relID uint32, t *Tuple, old *Tuple, oldKind byte) error {
	rel, ok := s.rels.Get(relID)
	if !ok {
		return fmt.Errorf("decoding pgoutput at %s: row for relation %d before its Relation message", at, relID)
	}
	if !s.cfg.Includes(rel.Namespace, rel.Name) {
		s.skip("other_table")
		return nil
	}
	if s.tx == nil {
		return fmt.Errorf("decoding pgoutput at %s: %s row outside a transaction (no Begin before it)", at, rel.QualifiedName())
	}
	if len(t.Columns) != len(rel.Columns) {
		return fmt.Errorf("decoding pgoutput at %s: %s row has %d columns, its Relation message %d", at, rel.QualifiedName(), len(t.Columns), len(rel.Columns))
	}
	ev := &s.ev
	ev.Op = op
	ev.Table = rel.QualifiedName()
	ev.ProcessedAt = time.Now()
	ev.Position++
	info := s.catalog[relID]
	ev.Columns = bindColumns(ev.Columns[:0], rel, t, info.nullable, nil)
	ev.KeyChanged = false
	ev.OldKeyColumns = ev.OldKeyColumns[:0]
	if old != nil {
		key := info.keyColumns(rel)
		ev.OldKeyColumns = bindColumns(ev.OldKeyColumns, rel, old, info.nullable, key)
		ev.KeyChanged = keyChanged(t, old, key)
	}
	return s.route(ctx, ev)
}

// route turns an event into records and hands them to the sink, inside the
// current transaction (or a snapshot pseudo-transaction).
func (s *session) route(ctx context.Context, ev *router.Event) error {
	var err error
	s.records, err = s.opt.Router.Route(ev, s.records[:0])
	if err != nil {
		var rowErr *router.RowError
		if !errors.As(err, &rowErr) {
			return fmt.Errorf("routing row of %s at %s: %w", ev.Table, pglogrepl.LSN(ev.CommitLSN), err)
		}
		if s.opt.Poison == nil || rowErr.Fatal {
			return rowErr
		}
		// The dead-letter record carries the row and the error's headers:
		// count about that, so that the producer's buffer never blocks.
		size := int64(1024)
		for _, c := range ev.Columns {
			size += int64(2*(len(c.Name)+len(c.Value.Text)) + 8) // JSON escapes
		}
		if err := s.acquire(ctx, 1, size); err != nil {
			return err
		}
		s.tx.Add(1)
		if err := s.opt.Poison(ctx, ev, nil, rowErr, s.ackerFor("", size, 0, ev.CommitTime)); err != nil {
			s.budget.Release(1, size) // its ack will never come
			return err
		}
		return nil
	}
	if len(s.records) == 0 {
		s.skip(skipReason(ev.Op))
		return nil
	}
	for i := range s.records {
		rec := &s.records[i]
		size := recordBytes(rec)
		if err := s.acquire(ctx, 1, size); err != nil {
			return err
		}
		s.tx.Add(1)
		ack := s.ackerFor(rec.Topic, size, len(rec.Key)+len(rec.Value), ev.CommitTime)
		if err := s.opt.Sink.Send(ctx, rec, ack); err != nil {
			err = fmt.Errorf("sending event %s (LSN %s, table %s) to %s: %w", rec.EventID, pglogrepl.LSN(ev.CommitLSN), ev.Table, rec.Topic, err)
			if errors.Is(err, ErrRecordRejected) && s.opt.Poison != nil {
				err = s.opt.Poison(ctx, ev, rec, err, s.ackerFor("", size, 0, ev.CommitTime))
				if err == nil {
					continue
				}
			}
			// The sink did not take it: its ack will never come.
			s.budget.Release(1, size)
			return err
		}
	}
	return nil
}

// ackerFor returns the ack callback of one record: it gives back size
// bytes of budget and reports published key+value bytes to the observer. A
// poison row's ack (topic "") is not a publication and is not reported as
// one.
func (s *session) ackerFor(topic string, size int64, published int, commitTime time.Time) func(error) {
	tx := s.tx
	return func(err error) {
		s.budget.Release(1, size)
		tx.Ack(err)
		if err == nil && topic != "" && s.opt.Observer != nil {
			s.opt.Observer.Published(topic, published, commitTime)
		}
	}
}

// acquire takes in-flight budget, answering the server while it waits so
// that a slow Kafka never looks like a dead client (wal_sender_timeout).
func (s *session) acquire(ctx context.Context, records int, bytes int64) error {
	for {
		ok, err := s.budget.Acquire(ctx, records, bytes, time.Second)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if err := s.ck.Err(); err != nil {
			return err
		}
		if err := s.maybeStatus(ctx, true); err != nil {
			return err
		}
	}
}

// maybeStatus sends a standby status update when the server asked, when
// the status interval passed, or when the confirmed LSN moved (at most every
// ConfirmEvery). write = flush = apply = confirmed: PostgreSQL keeps WAL
// from the slot's confirmed_flush_lsn, so claiming more would lose events.
func (s *session) maybeStatus(ctx context.Context, force bool) error {
	if !s.streaming {
		return nil
	}
	confirmed := s.ck.Confirmed()
	now := time.Now()
	due := now.Sub(s.lastStatus) >= s.cfg.StatusInterval
	moved := confirmed != s.lastConfirmed && now.Sub(s.lastStatus) >= s.opt.ConfirmEvery
	if !force && !due && !moved {
		return nil
	}
	err := pglogrepl.SendStandbyStatusUpdate(ctx, s.conn, pglogrepl.StandbyStatusUpdate{
		WALWritePosition: confirmed,
		WALFlushPosition: confirmed,
		WALApplyPosition: confirmed,
		ClientTime:       now,
	})
	if err != nil {
		return fmt.Errorf("sending standby status update (confirmed %s): %w", confirmed, err)
	}
	if s.opt.Observer != nil {
		if confirmed != s.lastConfirmed {
			s.opt.Observer.Confirmed(confirmed)
		}
		s.opt.Observer.Pending(s.ck.Oldest())
	}
	s.lastStatus = now
	s.lastConfirmed = confirmed
	return nil
}

// maybeHeartbeat does what Debezium does every heartbeat.interval.ms: run
// heartbeat.action.query (typically a write to a table in the publication,
// so a quiet database still produces WAL the slot can confirm) and emit a
// heartbeat record to the heartbeat topic. The slot's progress itself does
// not depend on heartbeats here: the keepalive rule moves an idle slot.
func (s *session) maybeHeartbeat(ctx context.Context) error {
	if s.cfg.HeartbeatInterval <= 0 || time.Since(s.lastHeartbeat) < s.cfg.HeartbeatInterval {
		return nil
	}
	s.lastHeartbeat = time.Now()
	if s.cfg.HeartbeatQuery != "" {
		if _, err := s.pg.Exec(ctx, s.cfg.HeartbeatQuery); err != nil {
			return fmt.Errorf("running heartbeat.action.query: %w", err)
		}
	}
	rec := s.opt.Router.Heartbeat(s.cfg.HeartbeatTopic, s.lastHeartbeat)
	size := recordBytes(&rec)
	if err := s.acquire(ctx, 1, size); err != nil {
		return err
	}
	// A heartbeat belongs to no transaction: its outcome never moves or
	// holds the confirmed LSN, and a failed one only warrants a warning.
	err := s.opt.Sink.Send(ctx, &rec, func(err error) {
		s.budget.Release(1, size)
		if err != nil {
			s.log.Warn("heartbeat not delivered", "topic", rec.Topic, "err", err)
		}
	})
	if err != nil {
		s.budget.Release(1, size)
	}
	return err
}

// recordBytes is what a record counts against MaxInFlightBytes: key,
// value, headers and a per-record allowance no smaller than what a Kafka
// producer counts for framing, so that a sink whose buffer is as large as
// the budget never has to block Send (a blocked Send would stop the
// answers to the server's keepalives).
func recordBytes(r *router.Record) int64 {
	n := int64(len(r.Key)+len(r.Value)) + 64
	for _, h := range r.Headers {
		n += int64(10 + len(h.Key) + len(h.Value))
	}
	return n
}

func skipReason(op router.Op) string {
	switch op {
	case router.OpUpdate:
		return "update"
	case router.OpDelete:
		return "delete"
	}
	return "routed_to_nothing"
}

// bindColumns pairs a tuple's values with the relation's column names and
// types. Values alias the frame: valid until the next message.
// With only, it binds just the columns marked there.
func bindColumns(dst []router.Column, rel *Relation, t *Tuple, nullable, only []bool) []router.Column {
	for i, c := range t.Columns {
		if only != nil && (i >= len(only) || !only[i]) {
			continue
		}
		rc := &rel.Columns[i]
		v := router.Value{OID: rc.TypeOID}
		switch c.Kind {
		case ColumnNull:
			v.Null = true
		case ColumnUnchanged:
			// An unchanged TOASTed value: the server did not send it.
			// Only updates carry these.
			v.Unchanged = true
		default:
			v.Text = c.Data
		}
		dst = append(dst, router.Column{Name: rc.Name, Value: v, Nullable: i < len(nullable) && nullable[i]})
	}
	return dst
}

// relCatalog is what pgoutput does not send about a relation's columns, in
// the order of its Relation message: whether each accepts NULL
// (JsonConverter schemas show it as "optional"), and whether it is part of
// the primary key (Debezium's record key, whatever the replica identity).
type relCatalog struct {
	nullable []bool
	primary  []bool
}

// keyColumns marks the columns that identify a row: the primary key, or,
// for a table without one, the replica identity the Relation message flags.
// With REPLICA IDENTITY FULL pgoutput flags every column, so the primary
// key must come from the catalog: otherwise every update would look like
// a key change.
func (c relCatalog) keyColumns(rel *Relation) []bool {
	for _, p := range c.primary {
		if p {
			return c.primary
		}
	}
	key := make([]bool, len(rel.Columns))
	for i, rc := range rel.Columns {
		key[i] = rc.Key
	}
	return key
}

// readRelCatalog reads nullability and primary-key membership of a
// relation's columns.
func readRelCatalog(ctx context.Context, conn *pgx.Conn, rel *Relation) (relCatalog, error) {
	rows, err := conn.Query(ctx, `SELECT a.attname, NOT a.attnotnull, coalesce(a.attnum = ANY(i.indkey), false)
		FROM pg_attribute a LEFT JOIN pg_index i ON i.indrelid = a.attrelid AND i.indisprimary
		WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped`, rel.ID)
	if err != nil {
		return relCatalog{}, fmt.Errorf("reading the columns of %s from pg_attribute: %w", rel.QualifiedName(), err)
	}
	type attr struct{ nullable, primary bool }
	byName := map[string]attr{}
	var name string
	var a attr
	if _, err = pgx.ForEachRow(rows, []any{&name, &a.nullable, &a.primary}, func() error {
		byName[name] = a
		return nil
	}); err != nil {
		return relCatalog{}, fmt.Errorf("reading the columns of %s from pg_attribute: %w", rel.QualifiedName(), err)
	}
	c := relCatalog{nullable: make([]bool, len(rel.Columns)), primary: make([]bool, len(rel.Columns))}
	for i, col := range rel.Columns {
		c.nullable[i] = byName[col.Name].nullable
		c.primary[i] = byName[col.Name].primary
	}
	return c, nil
}

// keyChanged reports whether an UPDATE changed the row's key. The old
// tuple ('K' key-only or 'O' full) carries the old key values; a key column
// it does not carry ('n' in a 'K' tuple of another replica identity) cannot
// be compared and counts as unchanged.
func keyChanged(newT, old *Tuple, key []bool) bool {
	for i := range key {
		if !key[i] || i >= len(old.Columns) || i >= len(newT.Columns) {
			continue
		}
		o, n := old.Columns[i], newT.Columns[i]
		if o.Kind == ColumnNull && n.Kind != ColumnNull {
			continue
		}
		if o.Kind != n.Kind || string(o.Data) != string(n.Data) {
			return true
		}
	}
	return false
}

// connect opens the ordinary and the replication connection as the relay's
// role.
func connect(ctx context.Context, cfg *Config) (*pgx.Conn, *pgconn.PgConn, error) {
	rc, err := cfg.ReplicationConfig()
	if err != nil {
		return nil, nil, err
	}
	conn, err := cfg.Connect(ctx)
	if err != nil {
		return nil, nil, err
	}
	repl, err := pgconn.ConnectConfig(ctx, rc)
	if err != nil {
		conn.Close(context.Background())
		return nil, nil, connectError("opening the replication connection", cfg, err)
	}
	return conn, repl, nil
}

// connectError wraps a failed connection with where it went and, for the
// failures a person must fix, which connector key to look at.
func connectError(op string, cfg *Config, err error) error {
	hint := ""
	var pgErr *pgconn.PgError
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	switch {
	case errors.As(err, &unknownCA):
		hint = "; the server certificate is not signed by database.sslrootcert: set it to the CA that signed it"
	case errors.As(err, &hostname):
		hint = "; the server certificate does not name database.hostname: connect by a name it lists, or use database.sslmode=verify-ca"
	case errors.As(err, &pgErr) && pgErr.Code == "28P01":
		hint = "; check database.user and database.password"
	case errors.As(err, &pgErr) && pgErr.Code == "28000":
		hint = "; add a pg_hba.conf line for this user, database and address (replication connections need one for the database too)"
	case errors.As(err, &pgErr) && pgErr.Code == "3D000":
		hint = "; check database.dbname"
	}
	return fmt.Errorf("%s to %s:%d/%s as %s: %w%s", op, cfg.Host, cfg.Port, cfg.DBName, cfg.User, err, hint)
}
