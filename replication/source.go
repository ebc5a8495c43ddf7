package replication

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/outboxrelay/outboxrelay/capture"
)

// SourceOptions are the knobs of a Source besides its Config. Log is
// required; Observer may be nil.
type SourceOptions struct {
	Log      *slog.Logger
	Observer Observer
	// ConfirmEvery rate-limits status updates that only report a moved
	// confirmed LSN. Default 100 ms.
	ConfirmEvery time.Duration
	// StandbyPoll is how often a standby instance tries the failover lock,
	// and how often the active one checks the lock's connection. Default 1 s.
	StandbyPoll time.Duration
}

// Source is the logical-replication capture source (capture.Source): each
// Open connects, checks, prepares the slot as Decide says, and returns a
// stream of pgoutput transactions.
//
// Active/passive failover: a Source streams only while it holds a
// PostgreSQL session advisory lock derived from the slot name, on a
// connection of its own kept across sessions (see acquireLock). A second
// instance with the same config waits in Open as standby and takes over,
// from the slot's confirmed LSN, within about StandbyPoll once the first
// one's lock connection is gone.
type Source struct {
	cfg  *Config
	opt  SourceOptions
	lock *pgx.Conn // the failover lock's connection, nil when not held
	// lockPID is the lock connection's backend (0: none), for Holds.
	lockPID atomic.Uint32
	// server is "<system id>/<timeline>" of the last session that opened:
	// what a process confirmed carries over only to the same server and
	// timeline.
	server string
}

// NewSource returns a source for cfg; it connects to nothing until Open.
func NewSource(cfg *Config, opt SourceOptions) (*Source, error) {
	if cfg == nil || opt.Log == nil {
		return nil, errors.New("replication.NewSource: Config and Log are required")
	}
	if opt.ConfirmEvery <= 0 {
		opt.ConfirmEvery = 100 * time.Millisecond
	}
	if opt.StandbyPoll <= 0 {
		opt.StandbyPoll = time.Second
	}
	if opt.Observer == nil {
		opt.Observer = nopObserver{}
	}
	return &Source{cfg: cfg, opt: opt}, nil
}

// Acquire takes the failover lock, waiting as standby while another
// instance holds it; a lock whose connection closed meanwhile (a lost
// server, a cancelled ping) is taken again.
func (s *Source) Acquire(ctx context.Context) error {
	if s.lock != nil && s.lock.IsClosed() {
		s.dropLock()
	}
	if s.lock != nil {
		return nil
	}
	lock, err := acquireLock(ctx, s.cfg, s.opt, s.state)
	if err != nil {
		return err
	}
	s.lock = lock
	s.lockPID.Store(lock.PgConn().PID())
	return nil
}

// holdsSQL asks whether a backend holds an advisory lock (the lock
// connection holds only the failover lock).
const holdsSQL = `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid = $1)`

// Holds says whether this instance still holds the failover lock, asked
// on a connection of its own (the lock's belongs to the stream's
// watcher): a relay frozen while another took over finds its lock
// connection's backend gone. Safe for any goroutine.
func (s *Source) Holds(ctx context.Context) (bool, error) {
	pid := s.lockPID.Load()
	if pid == 0 {
		return false, nil
	}
	conn, err := s.cfg.Connect(ctx)
	if err != nil {
		return false, fmt.Errorf("failover lock: checking it is held: %w", err)
	}
	defer conn.Close(context.Background())
	var held bool
	if err := conn.QueryRow(ctx, holdsSQL, pid).Scan(&held); err != nil {
		return false, fmt.Errorf("failover lock: %s: %w", holdsSQL, err)
	}
	return held, nil
}

// Retryable: see the function of that name.
func (s *Source) Retryable(err error) bool { return Retryable(err) }

// Close releases the failover lock.
func (s *Source) Close() { s.dropLock() }

func (s *Source) dropLock() {
	if s.lock != nil {
		s.lockPID.Store(0)
		s.lock.Close(context.Background())
		s.lock = nil
	}
}

func (s *Source) state(st capture.State) { s.opt.Observer.State(st) }

// Open takes the failover lock (waiting as standby while another instance
// holds it) and opens a session. The slot may still look active for a
// moment after our own previous connection (or process) died: the server
// notices a dead walsender client quickly but not at once. Open retries
// that as Debezium does (slot.max.retries × slot.retry.delay.ms) before
// calling the slot taken by someone else.
func (s *Source) Open(ctx context.Context, known capture.Known) (capture.Stream, error) {
	for busy := 1; ; busy++ {
		if err := s.Acquire(ctx); err != nil {
			return nil, err
		}
		st, err := s.open(ctx, known)
		if err == nil {
			return st, nil
		}
		if !Retryable(err) && !errors.Is(err, ErrSlotInUse) {
			s.dropLock()
		}
		if !errors.Is(err, ErrSlotInUse) || busy > s.cfg.SlotMaxRetries {
			return nil, err
		}
		s.opt.Log.Info("replication: slot still active, waiting for it to be released",
			"err", err, "retry", busy, "of", s.cfg.SlotMaxRetries, "delay", s.cfg.SlotRetryDelay.String())
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(s.cfg.SlotRetryDelay):
		}
	}
}

// open connects both connections, runs the preflight and carries out the
// plan up to the point where events can flow: the slot exists, and either
// the snapshot is open or START_REPLICATION was sent.
func (s *Source) open(ctx context.Context, known capture.Known) (_ *stream, err error) {
	cfg, log := s.cfg, s.opt.Log
	conn, repl, err := connect(ctx, cfg)
	if err != nil {
		return nil, err
	}
	st := newStream(s, conn, repl)
	defer func() {
		if err != nil {
			err = standbyError(err, st.srv != nil && st.srv.InRecovery)
			st.closeConns()
		}
	}()
	if st.srv, err = Preflight(ctx, conn, cfg, log); err != nil {
		return nil, err
	}
	if st.srv.InRecovery {
		// Once here, so that a slot the server invalidated is reported
		// before Decide refuses it (the relay then stops).
		r, err := ReadReplay(ctx, conn, cfg.Slot)
		if err != nil {
			return nil, err
		}
		s.opt.Observer.Standby(r)
	}
	sys, err := pglogrepl.IdentifySystem(ctx, repl)
	if err != nil {
		return nil, fmt.Errorf("IDENTIFY_SYSTEM: %w", err)
	}
	st.server = fmt.Sprintf("%s/%d", sys.SystemID, sys.Timeline)
	s.state(capture.StateConnected)
	log.Info("connected", "server_version_num", st.srv.VersionNum, "slot", cfg.Slot, "slot_exists", st.srv.Slot.Exists, "slot_confirmed_flush", st.srv.Slot.ConfirmedFlush.String())
	pending, err := snapshotPending(ctx, conn, cfg.Slot)
	if err != nil {
		return nil, err
	}
	st.plan = Decide(st.srv.Slot, pending, cfg, known)
	if err := s.prepare(ctx, st, known); err != nil {
		return nil, err
	}
	if !st.plan.snapshots() {
		if err := st.startReplication(ctx); err != nil {
			return nil, err
		}
	}
	st.watchLock(s.lock, s.opt.StandbyPoll)
	s.server = st.server
	return st, nil
}

// prepare carries out the plan's slot work and sets where the stream
// starts.
func (s *Source) prepare(ctx context.Context, st *stream, known capture.Known) error {
	cfg, log, p := s.cfg, s.opt.Log, st.plan
	if p.DropMarker {
		log.Warn("snapshot: the initial snapshot of this slot did not finish, and snapshot.mode=no_data does not redo it; dropping its marker",
			"slot", cfg.Slot, "marker", SnapshotMarker(cfg.Slot))
		if err := markSnapshotDone(ctx, st.conn, cfg.Slot); err != nil {
			return err
		}
	}
	if p.Forget {
		log.Warn("the replication slot is gone: creating it again and reading the outbox tables again (snapshot.mode=when_needed); rows still in the tables are sent again, rows deleted since are not",
			"slot", cfg.Slot, "last_delivered", known.Last().String())
	}
	st.from = st.srv.Slot.ConfirmedFlush
	if s.cfg.SlotFailover && st.srv.Slot.Exists && !st.srv.Slot.Failover && p.Action != Refuse {
		if err := enableFailover(ctx, st.repl, cfg.Slot, log); err != nil {
			return err
		}
	}
	switch p.Action {
	case Refuse:
		return p.Err
	case Done:
		log.Info("snapshot.mode=initial_only: the slot's snapshot was done before; nothing to stream, stopping", "slot", cfg.Slot)
		return capture.ErrEnd
	case Create, CreateWithSnapshot:
		return s.create(ctx, st)
	case RedoSnapshot:
		log.Warn("snapshot: the initial snapshot of this slot did not finish (the relay stopped before Kafka acknowledged all of it); reading the outbox tables again, then streaming from the slot's position: rows committed since the slot was created may be sent twice",
			"slot", cfg.Slot, "marker", SnapshotMarker(cfg.Slot), "from", st.from.String())
		return st.openSnapshot(ctx, "")
	}
	s.compare(st, known)
	// Resume from what this process already confirmed if the server lags
	// behind it (the last status update may not have reached it), but
	// only on the same server and timeline: after a failover the new
	// primary's WAL past its slot is not the WAL this process confirmed,
	// and starting later would skip transactions committed on it.
	if st.server == s.server {
		st.from = max(st.from, known.Confirmed)
	}
	return nil
}

// compare logs how the slot stands against the recorded position. Behind
// is normal: Debezium flushes its slot only when it commits offsets, with
// exactly-once the slot is confirmed after the Kafka commit, and a
// standby's synchronized slot may lag. The stream resumes from the slot and
// the relay skips what the position covers (it is in Kafka), unless it was
// recorded on another server or timeline (then the relay warns and sends
// it again). Ahead is normal too: the position is recorded on a timer.
func (s *Source) compare(st *stream, known capture.Known) {
	slot, rec := st.srv.Slot.ConfirmedFlush, known.Recorded
	switch {
	case rec == 0:
	case slot < rec:
		s.opt.Log.Info("the slot is behind the recorded position: resuming from the slot; what the position covers is in Kafka and is skipped",
			"slot", s.cfg.Slot, "slot_confirmed_flush", slot.String(), "recorded", rec.String(), "by", known.RecordedBy, "in", known.RecordedIn)
	case slot > rec:
		s.opt.Log.Info("the slot is ahead of the recorded position", "slot", s.cfg.Slot, "slot_confirmed_flush", slot.String(), "recorded", rec.String(), "by", known.RecordedBy)
	}
}

// create makes the slot; with a snapshot, the marker first (a crash between
// the two must not leave a slot whose snapshot looks done), and the
// exported snapshot is imported at once: it lives only until the next
// command on the replication connection.
func (s *Source) create(ctx context.Context, st *stream) error {
	withSnapshot := st.plan.Action == CreateWithSnapshot
	if withSnapshot {
		if err := markSnapshotPending(ctx, st.conn, s.cfg.Slot); err != nil {
			return err
		}
	}
	// A failover slot only once its snapshot is done: the marker is a
	// physical slot, which standbys do not copy, so a standby promoted
	// mid-snapshot would hold a copy that looks done (SnapshotDone enables
	// failover then).
	stop := func() {}
	if st.srv.InRecovery {
		stop = logStandbySnapshots(ctx, s.cfg.Primary(), s.cfg.Slot, s.opt.Log)
	}
	created, err := createSlot(ctx, st.repl, s.cfg.Slot, withSnapshot, s.cfg.SlotFailover && !withSnapshot, s.opt.Log)
	stop()
	if err != nil {
		return err
	}
	st.from = created.ConsistentPoint
	if withSnapshot {
		return st.openSnapshot(ctx, created.SnapshotName)
	}
	return nil
}

// ErrLockLost reports that the failover lock's connection failed while
// streaming: another instance may take over, so this one stops streaming at
// once and competes for the lock again. Retryable.
var ErrLockLost = errors.New("failover lock lost")

// lockSQL takes the failover lock without waiting. The key is derived from
// the slot name because the slot is what two relays must not share; the
// prefix keeps it apart from an application's own advisory locks.
const lockSQL = `SELECT pg_try_advisory_lock(hashtext('outboxrelay:' || $1))`

// acquireLock returns an ordinary connection holding the failover lock,
// polling every StandbyPoll while another instance holds it. The lock is a
// session lock: it lasts exactly as long as the connection, so a relay that
// dies, or loses its connection, releases it without anyone's help.
func acquireLock(ctx context.Context, cfg *Config, opt SourceOptions, state func(capture.State)) (*pgx.Conn, error) {
	conn, err := cfg.Connect(ctx)
	if err != nil {
		return nil, err
	}
	standby := false
	for {
		var held bool
		if err := conn.QueryRow(ctx, lockSQL, cfg.Slot).Scan(&held); err != nil {
			conn.Close(context.Background())
			return nil, fmt.Errorf("failover lock: %s for slot %q: %w", lockSQL, cfg.Slot, err)
		}
		if held {
			if standby {
				opt.Log.Info("failover lock acquired: taking over", "slot", cfg.Slot)
			}
			return conn, nil
		}
		if !standby {
			standby = true
			state(capture.StateStandby)
			opt.Log.Info("standby: another instance holds the failover lock; polling", "slot", cfg.Slot, "every", opt.StandbyPoll.String())
		}
		select {
		case <-ctx.Done():
			conn.Close(context.Background())
			return nil, ctx.Err()
		case <-time.After(opt.StandbyPoll):
		}
	}
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
		return nil, nil, cfg.ConnectError("opening the replication connection", err)
	}
	return conn, repl, nil
}
