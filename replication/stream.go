package replication

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/outboxrelay/outboxrelay/capture"
)

// stream is one session of the Source (capture.Stream). The goroutine that
// calls its methods owns both connections: it receives, decodes, yields
// and answers the server, and nothing else touches them (invariant 3). The
// lock watcher only reads lockErr's cause into the current receive.
type stream struct {
	src  *Source
	cfg  *Config
	conn *pgx.Conn // the ordinary connection: catalog, snapshot, heartbeat query
	// primary is database.primary.hostname's connection when conn is a
	// hot standby, for heartbeat.action.query (standbyHeartbeat); nil
	// until then, and after a failure until the next heartbeat.
	primary *pgx.Conn
	pri     primaryHealth
	repl    *pgconn.PgConn // the replication connection
	srv     *Server
	server  string // "<system id>/<timeline>"
	plan    Plan
	from    capture.LSN
	p       capture.Progress

	snap  *snapshotReader // the initial snapshot being read, until SnapshotDone
	ended bool            // initial_only: the snapshot was all there was

	rels *Relations
	// catalog holds what pgoutput does not say about each outbox relation
	// (see relCatalog), read once per Relation message.
	catalog map[uint32]relCatalog
	msg     Message
	ev      capture.Event
	row     capture.Row
	inTx    bool // a Begin was yielded and its Commit not yet

	streaming     bool // START_REPLICATION sent: status updates may flow
	replyDue      bool // the server asked for a reply
	lastStatus    time.Time
	lastHeartbeat time.Time
	lastConfirmed capture.LSN
	serverWALEnd  capture.LSN

	lockErr atomic.Pointer[error] // set by the lock watcher
	// recvMu guards recvCancel, which interrupts the receive in progress;
	// the lock watcher calls it.
	recvMu     sync.Mutex
	recvCancel func()
	recv       recvWindow
	stopWatch  func()
	txLSN      capture.LSN // the open transaction's final LSN, for errors
	// alone counts the events still to yield of a non-transactional
	// message's own transaction (its Row, then its Commit).
	alone     int
	walReport bool // a keepalive's WAL end waits to be reported, once the relay applied it
	// sampleWarned: the lock watcher logged a failed replay sample (its
	// own field: only the watcher reads and writes it).
	sampleWarned bool
}

func newStream(src *Source, conn *pgx.Conn, repl *pgconn.PgConn) *stream {
	return &stream{src: src, cfg: src.cfg, conn: conn, repl: repl, rels: NewRelations(), catalog: map[uint32]relCatalog{}, stopWatch: func() {}}
}

func (s *stream) From() capture.LSN { return s.from }

// Origin is the server and timeline, and whether the slot existed.
func (s *stream) Origin() (string, bool) {
	return s.server, s.plan.Action != Create && s.plan.Action != CreateWithSnapshot
}

// Start records the relay's progress. The snapshot (if any) was opened and
// START_REPLICATION (if no snapshot) sent by Open already.
func (s *stream) Start(ctx context.Context, p capture.Progress) error {
	s.p = p
	s.lastStatus = time.Now()
	s.lastConfirmed = s.from
	if s.snap != nil {
		s.src.state(capture.StateSnapshot)
	}
	return nil
}

func (s *stream) startReplication(ctx context.Context) error {
	if err := startReplication(ctx, s.repl, s.cfg, s.srv.VersionNum, s.from); err != nil {
		return err
	}
	s.streaming = true
	s.lastStatus = time.Now()
	s.src.state(capture.StateStreaming)
	s.src.opt.Log.Info("streaming", "slot", s.cfg.Slot, "publication", s.cfg.Publication, "from", s.from.String(), "tables", s.srv.Tables)
	return nil
}

// Next yields the next event: a snapshot row while the snapshot lasts,
// then what the server streams. The receive deadline doubles as the status
// timer. On a hot standby a 40001 or 40P01 is an ErrRecoveryConflict.
func (s *stream) Next(ctx context.Context) (*capture.Event, error) {
	ev, err := s.next(ctx)
	if err != nil {
		return nil, standbyError(err, s.srv.InRecovery)
	}
	return ev, nil
}

func (s *stream) next(ctx context.Context) (*capture.Event, error) {
	if s.ended {
		return nil, capture.ErrEnd
	}
	if err := s.lockLost(); err != nil {
		return nil, err
	}
	if s.snap != nil {
		return s.nextSnapshot(ctx)
	}
	if s.alone > 0 {
		return s.nextAlone(), nil
	}
	if s.walReport {
		s.walReport = false
		s.src.opt.Observer.Received(s.p.Confirmed(), s.serverWALEnd)
	}
	for {
		if err := s.lockLost(); err != nil {
			return nil, err
		}
		now := time.Now() // one clock reading per turn
		if err := s.maybeStatus(ctx, now, s.replyDue); err != nil {
			return nil, err
		}
		if s.heartbeatDue(now) {
			return s.heartbeat(ctx)
		}
		raw, err := s.receive(ctx, now)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if pgconn.Timeout(err) {
				continue
			}
			if lost := s.lockLost(); lost != nil {
				return nil, lost
			}
			return nil, fmt.Errorf("receiving WAL: %w", err)
		}
		var ev *capture.Event
		switch m := raw.(type) {
		case *pgproto3.CopyData:
			ev, err = s.copyData(ctx, m.Data)
		case *pgproto3.ErrorResponse:
			err = fmt.Errorf("receiving WAL: server error: %w", pgconn.ErrorResponseToPgError(m))
		case *pgproto3.CopyDone:
			err = fmt.Errorf("receiving WAL: server ended the stream (CopyDone)")
		}
		if ev != nil || err != nil {
			return ev, err
		}
	}
}

// receive waits for one message until the next status update is due;
// while records are in flight, at most ConfirmEvery, so that the slot
// follows Kafka's acknowledgements closely.
func (s *stream) receive(ctx context.Context, now time.Time) (pgproto3.BackendMessage, error) {
	s.window(ctx, now, s.due(now))
	if s.lockErr.Load() != nil {
		interrupt(s.recv.conn)
	}
	// context.Background: pgconn then watches no context per message (an
	// AfterFunc registered and removed per message); the window's read
	// deadline and its one AfterFunc on ctx do that job.
	return s.repl.ReceiveMessage(context.Background())
}

// due is when the next receive must return by: the next status update or
// heartbeat; while records are in flight, at most ConfirmEvery from now.
func (s *stream) due(now time.Time) time.Time {
	deadline := s.lastStatus.Add(s.cfg.StatusInterval)
	if s.cfg.HeartbeatInterval > 0 {
		deadline = minTime(deadline, s.lastHeartbeat.Add(s.cfg.HeartbeatInterval))
	}
	if s.p.InFlight() > 0 || s.p.Confirmed() != s.lastConfirmed {
		deadline = minTime(deadline, now.Add(s.src.opt.ConfirmEvery))
	}
	return deadline
}

// recvWindow is the read deadline receives wait under. It is kept across
// receives while it is no later than the one the next receive needs
// (waking early only costs a turn of Next's loop): a context with a
// deadline, and with it a timer, per message was a tenth of the relay's
// CPU at a steady 1,000 events/s, four messages an event. ctx ending, or
// the lock watcher, interrupt the receive in progress by moving the
// deadline to the past.
type recvWindow struct {
	conn     net.Conn
	parent   context.Context
	deadline time.Time
	stop     func() bool   // stops the AfterFunc on parent
	done     chan struct{} // closed when that AfterFunc has run
}

// interrupt ends the receive in progress on conn, and every one after it
// until the window is replaced.
func interrupt(conn net.Conn) { _ = conn.SetReadDeadline(time.Unix(1, 0)) }

// window makes sure the receive window ends no later than deadline.
func (s *stream) window(ctx context.Context, now, deadline time.Time) {
	w := &s.recv
	if w.conn != nil && w.parent == ctx && !w.deadline.After(deadline) && now.Before(w.deadline) {
		return
	}
	s.endRecv()
	conn := s.repl.Conn()
	_ = conn.SetReadDeadline(deadline)
	done := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(done)
		interrupt(conn)
	})
	*w = recvWindow{conn: conn, parent: ctx, deadline: deadline, stop: stop, done: done}
	s.recvMu.Lock()
	s.recvCancel = func() { interrupt(conn) }
	s.recvMu.Unlock()
}

// endRecv ends the window: no read deadline on the connection.
func (s *stream) endRecv() {
	w := &s.recv
	if w.conn == nil {
		return
	}
	s.recvMu.Lock()
	s.recvCancel = nil
	s.recvMu.Unlock()
	if !w.stop() {
		<-w.done // it ran: let it finish before the deadline is cleared
	}
	_ = w.conn.SetReadDeadline(time.Time{})
	*w = recvWindow{}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func (s *stream) copyData(ctx context.Context, data []byte) (*capture.Event, error) {
	if len(data) == 0 {
		return nil, nil
	}
	switch data[0] {
	case pglogrepl.PrimaryKeepaliveMessageByteID:
		ka, err := pglogrepl.ParsePrimaryKeepaliveMessage(data[1:])
		if err != nil {
			return nil, fmt.Errorf("parsing keepalive: %w", err)
		}
		walEnd := capture.LSN(ka.ServerWALEnd)
		s.serverWALEnd = walEnd
		s.replyDue = s.replyDue || ka.ReplyRequested
		// Invariant 2: the server's WAL end may be confirmed only between
		// transactions; the relay checks that nothing is in flight. The
		// WAL end is reported after the relay applied it, so that the lag
		// of an idle outbox reads 0.
		if !s.inTx {
			s.walReport = true
			s.ev = capture.Event{Kind: capture.KindIdle, LSN: walEnd}
			return &s.ev, nil
		}
		s.src.opt.Observer.Received(s.p.Confirmed(), walEnd)
		return nil, s.maybeStatus(ctx, time.Now(), s.replyDue)
	case pglogrepl.XLogDataByteID:
		xld, err := pglogrepl.ParseXLogData(data[1:])
		if err != nil {
			return nil, fmt.Errorf("parsing XLogData: %w", err)
		}
		if walEnd := capture.LSN(xld.ServerWALEnd); walEnd > s.serverWALEnd {
			s.serverWALEnd = walEnd
			s.src.opt.Observer.Received(s.p.Confirmed(), walEnd)
		}
		return s.walData(ctx, capture.LSN(xld.WALStart), xld.WALData)
	}
	return nil, nil
}

// walData decodes one pgoutput message into an event, or nil for a
// message the relay need not see.
func (s *stream) walData(ctx context.Context, at capture.LSN, frame []byte) (*capture.Event, error) {
	if err := Decode(frame, &s.msg); err != nil {
		return nil, fmt.Errorf("decoding pgoutput at %s: %w", at, err)
	}
	m := &s.msg
	switch m.Type {
	case MessageBegin:
		if s.inTx {
			return nil, fmt.Errorf("decoding pgoutput at %s: Begin of %s inside transaction %s", at, m.Begin.FinalLSN, s.txLSN)
		}
		s.inTx, s.txLSN = true, m.Begin.FinalLSN
		s.row.Position = 0
		s.ev = capture.Event{Kind: capture.KindBegin, LSN: m.Begin.FinalLSN, CommitTime: m.Begin.CommitTime, Xid: m.Begin.Xid}
		return &s.ev, nil
	case MessageCommit:
		if !s.inTx {
			return nil, fmt.Errorf("decoding pgoutput at %s: Commit without Begin", at)
		}
		s.inTx = false
		s.ev = capture.Event{Kind: capture.KindCommit, LSN: m.Commit.CommitLSN, EndLSN: m.Commit.EndLSN}
		return &s.ev, nil
	case MessageRelation:
		return nil, s.relation(ctx, &m.Relation)
	case MessageInsert:
		return s.rowEvent(at, capture.OpCreate, m.Insert.RelationID, &m.Insert.New, nil)
	case MessageUpdate:
		var old *Tuple
		if m.Update.OldKind != OldTupleNone {
			old = &m.Update.Old
		}
		return s.rowEvent(at, capture.OpUpdate, m.Update.RelationID, &m.Update.New, old)
	case MessageDelete:
		return s.rowEvent(at, capture.OpDelete, m.Delete.RelationID, &m.Delete.Old, nil)
	case MessageTruncate:
		s.skip("truncate")
	case MessageLogical:
		return s.messageEvent(at, &m.Logical)
	case MessageOrigin, MessageDataType:
		// Origin names a replication origin; Type describes a custom type
		// by name. Neither affects routing of text-format values.
	}
	return nil, nil
}

// messageEvent yields a logical decoding message the configuration routes
// (IncludesMessage); others are counted and skipped. A transactional one
// is a row of the open transaction: confirmed, ordered and rolled back
// with it. A non-transactional one, which the walsender sends as it
// decodes it, between transactions, whether or not the transaction that
// emitted it commits, gets a transaction of its own at its LSN, as
// Debezium publishes it on its own.
func (s *stream) messageEvent(at capture.LSN, l *LogicalMessage) (*capture.Event, error) {
	if !s.cfg.IncludesMessage(l.Prefix) {
		s.skip("logical_message")
		return nil, nil
	}
	r := &s.row
	*r = capture.Row{Op: capture.OpMessage, Columns: r.Columns[:0], OldKey: r.OldKey[:0], Position: r.Position,
		Prefix: l.Prefix, Content: l.Content}
	if !l.Transactional {
		if s.inTx {
			return nil, fmt.Errorf("decoding pgoutput at %s: non-transactional message (prefix %q) inside transaction %s", at, l.Prefix, s.txLSN)
		}
		s.inTx, s.txLSN, s.alone = true, l.LSN, 2
		r.Position = 1
		s.ev = capture.Event{Kind: capture.KindBegin, LSN: l.LSN, CommitTime: time.Now()}
		return &s.ev, nil
	}
	if !s.inTx {
		return nil, fmt.Errorf("decoding pgoutput at %s: transactional message (prefix %q) outside a transaction (no Begin before it)", at, l.Prefix)
	}
	r.Position++
	s.ev = capture.Event{Kind: capture.KindRow, LSN: at, Row: r}
	return &s.ev, nil
}

// nextAlone yields the Row and then the Commit of a non-transactional
// message's transaction. The message still aliases the frame: nothing was
// received since.
func (s *stream) nextAlone() *capture.Event {
	s.alone--
	if s.alone == 1 {
		s.ev = capture.Event{Kind: capture.KindRow, LSN: s.txLSN, Row: &s.row}
		return &s.ev
	}
	s.inTx = false
	s.ev = capture.Event{Kind: capture.KindCommit, LSN: s.txLSN, EndLSN: s.txLSN}
	return &s.ev
}

func (s *stream) relation(ctx context.Context, r *RelationMessage) error {
	rel := s.rels.Put(r)
	if !s.cfg.Includes(rel.Namespace, rel.Name) {
		delete(s.catalog, rel.ID) // renamed out of table.include.list
		return nil
	}
	info, err := readRelCatalog(ctx, s.conn, rel)
	if err != nil {
		return err
	}
	s.catalog[rel.ID] = info
	return nil
}

func (s *stream) skip(reason string) { s.src.opt.Observer.Skipped(reason) }

// rowEvent binds one decoded row of any table; rows of other tables are
// counted and not yielded.
func (s *stream) rowEvent(at capture.LSN, op capture.Op, relID uint32, t *Tuple, old *Tuple) (*capture.Event, error) {
	rel, ok := s.rels.Get(relID)
	if !ok {
		return nil, fmt.Errorf("decoding pgoutput at %s: row for relation %d before its Relation message", at, relID)
	}
	// An entry in catalog: its last Relation message matched
	// table.include.list (the regexps run once per Relation message, not
	// once per row).
	info, included := s.catalog[relID]
	if !included {
		s.skip("other_table")
		return nil, nil
	}
	if !s.inTx {
		return nil, fmt.Errorf("decoding pgoutput at %s: %s row outside a transaction (no Begin before it)", at, rel.QualifiedName())
	}
	if len(t.Columns) != len(rel.Columns) {
		return nil, fmt.Errorf("decoding pgoutput at %s: %s row has %d columns, its Relation message %d", at, rel.QualifiedName(), len(t.Columns), len(rel.Columns))
	}
	r := &s.row
	r.Op = op
	r.Table = rel.QualifiedName()
	r.Position++
	r.Columns = bindColumns(r.Columns[:0], rel, t, info.nullable, nil)
	r.KeyChanged = false
	r.OldKey = r.OldKey[:0]
	if old != nil {
		key := info.keyColumns(rel)
		r.OldKey = bindColumns(r.OldKey, rel, old, info.nullable, key)
		r.KeyChanged = keyChanged(t, old, key)
	}
	s.ev = capture.Event{Kind: capture.KindRow, LSN: at, Row: r}
	return &s.ev, nil
}

// KeepAlive sends a status update now: the relay is waiting for Kafka.
func (s *stream) KeepAlive(ctx context.Context) error {
	if err := s.lockLost(); err != nil {
		return err
	}
	return s.maybeStatus(ctx, time.Now(), true)
}

// maybeStatus sends a standby status update when the server asked, when
// the status interval passed, or when the confirmed LSN moved (at most every
// ConfirmEvery). write = flush = apply = confirmed: PostgreSQL keeps WAL
// from the slot's confirmed_flush_lsn, so claiming more would lose events.
func (s *stream) maybeStatus(ctx context.Context, now time.Time, force bool) error {
	if !s.streaming {
		return nil
	}
	confirmed := s.p.Confirmed()
	due := now.Sub(s.lastStatus) >= s.cfg.StatusInterval
	moved := confirmed != s.lastConfirmed && now.Sub(s.lastStatus) >= s.src.opt.ConfirmEvery
	if !force && !due && !moved {
		return nil
	}
	err := pglogrepl.SendStandbyStatusUpdate(ctx, s.repl, pglogrepl.StandbyStatusUpdate{
		WALWritePosition: pglogrepl.LSN(confirmed),
		WALFlushPosition: pglogrepl.LSN(confirmed),
		WALApplyPosition: pglogrepl.LSN(confirmed),
		ClientTime:       now,
	})
	if err != nil {
		return fmt.Errorf("sending standby status update (confirmed %s): %w", confirmed, err)
	}
	if confirmed != s.lastConfirmed {
		s.src.opt.Observer.Confirmed(confirmed)
	}
	s.src.opt.Observer.Pending(s.p.Oldest())
	s.lastStatus = now
	s.lastConfirmed = confirmed
	s.replyDue = false
	return nil
}

func (s *stream) heartbeatDue(now time.Time) bool {
	return s.cfg.HeartbeatInterval > 0 && now.Sub(s.lastHeartbeat) >= s.cfg.HeartbeatInterval
}

// heartbeat does the PostgreSQL half of what Debezium does every
// heartbeat.interval.ms: it runs heartbeat.action.query (typically a write
// to a table in the publication, so a quiet database still produces WAL
// the slot can confirm); the relay emits the heartbeat record. The slot's
// progress itself does not depend on heartbeats: the keepalive rule moves
// an idle slot. On a hot standby the query runs on the primary
// (standbyHeartbeat), and a primary that cannot take it does not keep the
// record from being emitted.
func (s *stream) heartbeat(ctx context.Context) (*capture.Event, error) {
	s.lastHeartbeat = time.Now()
	if s.cfg.HeartbeatQuery != "" {
		if err := s.heartbeatQuery(ctx, s.lastHeartbeat); err != nil {
			return nil, err
		}
	}
	s.ev = capture.Event{Kind: capture.KindHeartbeat, CommitTime: s.lastHeartbeat}
	return &s.ev, nil
}

// heartbeatQuery runs heartbeat.action.query on the server the stream
// reads, or while that is a hot standby on database.primary.hostname. A
// failure on the stream's own server ends the session, as any failure of
// that server does.
func (s *stream) heartbeatQuery(ctx context.Context, now time.Time) error {
	if s.srv.InRecovery {
		standby, err := s.stillStandby(ctx)
		if err != nil {
			return err
		}
		if standby {
			return s.standbyHeartbeat(ctx, now)
		}
	}
	if _, err := s.conn.Exec(ctx, s.cfg.HeartbeatQuery); err != nil {
		return fmt.Errorf("running heartbeat.action.query on %s: %w", s.conn.Config().Host, err)
	}
	return nil
}

// Close is the PostgreSQL end of the shutdown order: the relay has stopped
// reading and flushed Kafka; send the final status update, end the COPY,
// drop the slot if slot.drop.on.stop asks and the stop was orderly and
// complete, close both connections.
func (s *stream) Close(ctx context.Context, end capture.Ending) error {
	defer s.closeConns()
	s.endRecv()
	if s.snap != nil {
		s.snap.close()
	}
	var err error
	if s.p != nil {
		err = s.maybeStatus(ctx, time.Now(), true)
	}
	if s.streaming {
		// Closing the socket now could kill the walsender in the middle of
		// a write, before it reads the status update just sent: the slot
		// would keep its older position and a restart would send again
		// what Kafka already has. Ending the COPY makes the server read
		// everything we sent first.
		if err := endCopy(ctx, s.repl); err != nil {
			s.src.opt.Log.Debug("stopping: ending the replication stream", "err", err)
		}
		s.src.opt.Log.Info("stream stopped", "confirmed", s.p.Confirmed().String())
	}
	s.stopWatch()
	if s.lockLost() != nil {
		s.src.dropLock()
	}
	if s.cfg.DropSlotOnStop && end.Orderly && s.streaming {
		s.dropOnStop(end.Complete && ctx.Err() == nil)
	}
	return err
}

func (s *stream) closeConns() {
	s.conn.Close(context.Background())
	s.repl.Close(context.Background())
	s.closePrimary()
}

// dropOnStop drops the slot after an orderly stop (slot.drop.on.stop), on
// the replication connection, which Close has taken out of streaming.
func (s *stream) dropOnStop(complete bool) {
	if !complete {
		s.src.opt.Log.Warn("stopping: the slot is kept although slot.drop.on.stop is set: Kafka did not acknowledge every record, or a transaction was left half read, and the rest would be lost with it", "in_flight", s.p.InFlight())
		return
	}
	dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := dropSlot(dctx, s.repl, s.cfg.Slot); err != nil {
		s.src.opt.Log.Warn("stopping: the slot was not dropped; drop it by hand if it is no longer needed", "err", err,
			"sql", fmt.Sprintf("SELECT pg_drop_replication_slot('%s');", s.cfg.Slot))
		return
	}
	s.src.opt.Log.Info("replication slot dropped (slot.drop.on.stop)", "slot", s.cfg.Slot)
}

// endCopy sends CopyDone and reads, discarding the WAL still in flight,
// until the server has ended the stream too (ReadyForQuery), ctx ends, or
// the connection fails. The server handles our messages in order, so the
// status update sent before CopyDone has been applied to the slot when it
// answers.
func endCopy(ctx context.Context, conn *pgconn.PgConn) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn.Frontend().Send(&pgproto3.CopyDone{})
	if err := conn.Frontend().Flush(); err != nil {
		return fmt.Errorf("sending CopyDone: %w", err)
	}
	for {
		msg, err := conn.ReceiveMessage(ctx)
		if err != nil {
			return fmt.Errorf("waiting for the end of the stream: %w", err)
		}
		switch m := msg.(type) {
		case *pgproto3.ReadyForQuery:
			return nil
		case *pgproto3.ErrorResponse:
			return fmt.Errorf("ending the stream: %w", pgconn.ErrorResponseToPgError(m))
		}
	}
}

// watchLock checks the failover lock's connection every poll while the
// stream lives; when it fails, the receive in progress is cancelled and
// the stream's next call returns ErrLockLost. The watcher is the only user
// of lock meanwhile. On a hot standby (the lock lives there, with the
// slot) its check is the replay sample the Observer gets (see probeLock).
func (s *stream) watchLock(lock *pgx.Conn, poll time.Duration) {
	wctx, done := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(poll)
		defer t.Stop()
		for {
			select {
			case <-wctx.Done():
				return
			case <-t.C:
			}
			pctx, cancel := context.WithTimeout(wctx, 5*time.Second)
			err := s.probeLock(pctx, lock)
			cancel()
			if err != nil && wctx.Err() == nil {
				lost := fmt.Errorf("%w: its connection failed: %w", ErrLockLost, err)
				s.lockErr.Store(&lost)
				s.recvMu.Lock()
				if s.recvCancel != nil {
					s.recvCancel()
				}
				s.recvMu.Unlock()
				return
			}
		}
	}()
	s.stopWatch = func() { done(); <-stopped; s.stopWatch = func() {} }
}

// probeLock is the watcher's check of the lock's connection: a ping on a
// primary; on a hot standby ReadReplay, whose sample goes to the Observer
// (the connection the relay already keeps open there, so sampling costs
// no connection of its own). A sample the server refused while the
// connection stays open (an ERROR, not FATAL) leaves the lock held: it is
// logged once and the connection counts as alive.
func (s *stream) probeLock(ctx context.Context, lock *pgx.Conn) error {
	if !s.srv.InRecovery {
		return lock.Ping(ctx)
	}
	r, err := ReadReplay(ctx, lock, s.cfg.Slot)
	if err == nil {
		s.src.opt.Observer.Standby(r)
		return nil
	}
	if sampleRefused(err, lock.IsClosed()) {
		if !s.sampleWarned {
			s.sampleWarned = true
			s.src.opt.Log.Warn("standby: sampling the replay lag failed; outboxrelay_standby_* keep their last values", "err", err)
		}
		return nil
	}
	return err
}

// sampleRefused: the server answered the replay sample with an ERROR on
// a connection still open, which therefore still holds the lock; a FATAL
// or PANIC ends the session (and the lock with it), and any other error
// (the network, a timeout) leaves the connection's state unknown.
func sampleRefused(err error, closed bool) bool {
	var pgErr *pgconn.PgError
	return !closed && errors.As(err, &pgErr) && pgErr.Severity != "FATAL" && pgErr.Severity != "PANIC"
}

func (s *stream) lockLost() error {
	if p := s.lockErr.Load(); p != nil {
		return *p
	}
	return nil
}

var _ capture.Stream = (*stream)(nil)

// errNoSnapshot guards SnapshotDone outside a snapshot.
var errNoSnapshot = errors.New("SnapshotDone without a snapshot")
