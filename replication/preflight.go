package replication

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/outboxrelay/outboxrelay/capture"
	"github.com/outboxrelay/outboxrelay/postgres"
)

// Sentinel errors of the preflight. Each surfaces wrapped in an error that
// says what to run or set; callers test with errors.Is to pick an exit code.
var (
	ErrWALLevel      = errors.New("wal_level is not logical")
	ErrNoReplication = errors.New("role may not replicate")
	ErrPublication   = errors.New("publication missing or incomplete")
	ErrSlotInUse     = errors.New("replication slot is held by another connection")
	ErrSlotIncompat  = errors.New("replication slot cannot be used")
	ErrSlotGone      = errors.New("replication slot is gone")
	ErrServerVersion = errors.New("PostgreSQL version not supported")
	// ErrStandby: database.hostname is a hot standby, which the relay
	// can decode on only with database.primary.hostname set (and not in
	// poll mode).
	ErrStandby = errors.New("database.hostname is a hot standby")
)

// Server is what the preflight learned about the database.
type Server struct {
	VersionNum int      // server_version_num, e.g. 150018
	InRecovery bool     // a hot standby: database.primary.hostname does what it cannot
	Tables     []string // the outbox tables in the publication, "schema.table"
	Slot       Slot
}

// Slot is a row of pg_replication_slots.
type Slot struct {
	Exists         bool
	Plugin         string
	Database       string
	Temporary      bool
	Active         bool
	ActivePID      int
	ConfirmedFlush capture.LSN
	WALStatus      string
	Failover       bool // PostgreSQL 17+: synchronized to standbys
	// Invalidated is why the server invalidated the slot, "" when it did
	// not: PostgreSQL 17+'s invalidation_reason (wal_removed,
	// rows_removed, wal_level_insufficient, idle_timeout), or on 16
	// "conflicting with recovery" when conflicting is true.
	Invalidated string
	Synced      bool // PostgreSQL 17+: a standby's copy of a primary's slot
}

// Preflight checks, over an ordinary connection as the relay's role, that
// the server can stream the outbox: version, wal_level, the role's rights,
// the publication (created or altered when publication.autocreate.mode
// allows), and reads the slot's state for Decide. It changes nothing but
// the publication. On a hot standby it checks that database.primary.hostname
// is the standby's primary (the same system identifier), and runs the
// publication's DDL there.
func Preflight(ctx context.Context, conn *pgx.Conn, cfg *Config, log *slog.Logger) (*Server, error) {
	set, err := ReadSettings(ctx, conn)
	if err != nil {
		return nil, err
	}
	for _, f := range set.Findings(cfg) {
		if !f.OK {
			return nil, f.Err
		}
	}
	srv := &Server{VersionNum: set.VersionNum, InRecovery: set.InRecovery}
	pub := &publisher{conn: conn, standby: set.InRecovery, cfg: cfg, log: log}
	if set.InRecovery {
		if err := pub.connectPrimary(ctx); err != nil {
			return nil, err
		}
		defer pub.close()
	}
	tables, err := publicationTables(ctx, pub)
	if err != nil {
		return nil, err
	}
	srv.Tables = tables
	if srv.Slot, err = InspectSlot(ctx, conn, cfg.Slot); err != nil {
		return nil, err
	}
	return srv, nil
}

// Settings are what the preflight and check read about the server and the
// relay's role.
type Settings struct {
	VersionNum  int    // server_version_num, e.g. 180001
	Version     string // server_version, e.g. "18.1"
	WALLevel    string
	MaxSlots    int // max_replication_slots
	MaxSenders  int // max_wal_senders
	Replication bool
	Superuser   bool
	// InRecovery is pg_is_in_recovery(): the server is a hot standby.
	InRecovery bool
}

// ReadSettings reads the settings in one query.
func ReadSettings(ctx context.Context, conn *pgx.Conn) (Settings, error) {
	var s Settings
	err := conn.QueryRow(ctx, `SELECT current_setting('server_version_num')::int, current_setting('server_version'), current_setting('wal_level'),
		current_setting('max_replication_slots')::int, current_setting('max_wal_senders')::int, r.rolreplication, r.rolsuper, pg_is_in_recovery()
		FROM pg_roles r WHERE r.rolname = current_user`).
		Scan(&s.VersionNum, &s.Version, &s.WALLevel, &s.MaxSlots, &s.MaxSenders, &s.Replication, &s.Superuser, &s.InRecovery)
	if err != nil {
		return s, fmt.Errorf("preflight: reading server settings and the role's attributes: %w", err)
	}
	return s, nil
}

// Finding is the outcome of one precondition: what was found, and for a
// failed one the fix (for check's ✗ line) and the error that stops run.
type Finding struct {
	Name   string
	OK     bool
	Detail string
	Fix    string
	Err    error
}

// Findings judges the server version, wal_level and the role's right to
// replicate: the preconditions run and check share.
func (s Settings) Findings(cfg *Config) []Finding {
	version := Finding{Name: "server version", OK: true, Detail: "PostgreSQL " + s.Version}
	if s.VersionNum < 130000 {
		version = Finding{Name: "server version", Detail: s.Version, Fix: "upgrade to PostgreSQL 13 or newer",
			Err: fmt.Errorf("preflight: %w: server_version_num is %d; outboxrelay needs PostgreSQL 13 or newer", ErrServerVersion, s.VersionNum)}
	}
	wal := Finding{Name: "wal_level", OK: true, Detail: s.WALLevel}
	if s.WALLevel != "logical" {
		wal = Finding{Name: "wal_level", Detail: s.WALLevel, Fix: "ALTER SYSTEM SET wal_level = logical; -- then restart PostgreSQL",
			Err: fmt.Errorf("preflight: %w: wal_level is %q; run ALTER SYSTEM SET wal_level = logical; and restart PostgreSQL", ErrWALLevel, s.WALLevel)}
	}
	role := Finding{Name: "REPLICATION attribute", OK: true, Detail: "role " + cfg.User}
	switch {
	case s.Superuser:
		role.Detail += " is a superuser (a role with LOGIN REPLICATION and SELECT on the outbox is enough)"
	case !s.Replication:
		role = Finding{Name: "REPLICATION attribute", Detail: "role " + cfg.User + " may not open replication connections",
			Fix: "ALTER ROLE " + postgres.QuoteIdent(cfg.User) + " REPLICATION;",
			Err: fmt.Errorf("preflight: %w: role %q has neither REPLICATION nor SUPERUSER; run ALTER ROLE %s REPLICATION; (database.user)", ErrNoReplication, cfg.User, postgres.QuoteIdent(cfg.User))}
	}
	out := []Finding{version, wal, role}
	if s.InRecovery {
		out = append(out, s.standbyFinding(cfg))
	}
	if cfg.SlotFailover && !s.InRecovery { // on a standby, standbyFinding refuses it
		out = append(out, s.failoverFinding())
	}
	if cfg.Messages {
		out = append(out, s.messagesFinding())
	}
	return out
}

// standbyFinding: a hot standby hosts a logical slot from PostgreSQL 16 on;
// what it cannot do (pg_log_standby_snapshot() while the slot is created,
// heartbeat.action.query, the janitor's deletes, the publication's DDL) is
// done on database.primary.hostname. The failover lock stays on the
// standby: it guards the slot, which lives there. slot.failover is
// refused: PostgreSQL refuses to create, or alter into, a failover slot on
// a standby (0A000), which would stop the relay late, after a whole
// initial snapshot, with a message that names no key.
func (s Settings) standbyFinding(cfg *Config) Finding {
	switch {
	case s.VersionNum < 160000:
		return Finding{Name: "hot standby", Detail: "database.hostname is a hot standby running PostgreSQL " + s.Version + ", which cannot host a logical slot",
			Fix: "point database.hostname at the primary, or upgrade to PostgreSQL 16 or newer",
			Err: fmt.Errorf("preflight: %w: database.hostname %s is a hot standby (pg_is_in_recovery() is true) running PostgreSQL %s (server_version_num %d), and a standby can host a logical slot from PostgreSQL 16 on: point database.hostname at the primary, or upgrade",
				ErrStandby, cfg.Where(), s.Version, s.VersionNum)}
	case cfg.Primary() == nil:
		return Finding{Name: "hot standby", Detail: "database.hostname is a hot standby and database.primary.hostname is not set",
			Fix: "set database.primary.hostname (and database.primary.port) to the primary",
			Err: fmt.Errorf("preflight: %w: database.hostname %s is a hot standby (pg_is_in_recovery() is true); pg_log_standby_snapshot() at slot creation, heartbeat.action.query and the janitor's deletes need the primary: set database.primary.hostname and database.primary.port",
				ErrStandby, cfg.Where())}
	case cfg.SlotFailover:
		return Finding{Name: "hot standby", Detail: "database.hostname is a hot standby and slot.failover is true: PostgreSQL refuses failover slots created on a standby",
			Fix: "set slot.failover=false (after a promotion it may be set to true)",
			Err: fmt.Errorf("preflight: %w: database.hostname %s is a hot standby (pg_is_in_recovery() is true) and slot.failover is true: PostgreSQL refuses failover slots created on a standby (it synchronizes failover slots from a primary to its standbys, not the other way): set slot.failover=false; after a promotion it may be set to true",
				ErrStandby, cfg.Where())}
	}
	return Finding{Name: "hot standby", OK: true, Detail: "database.hostname is a hot standby (PostgreSQL " + s.Version + "): the slot is created and read there; the primary is " + cfg.Primary().Where()}
}

// messagesFinding: pgoutput sends logical decoding messages from
// PostgreSQL 14 on (the messages option).
func (s Settings) messagesFinding() Finding {
	if s.VersionNum >= 140000 {
		return Finding{Name: "logical decoding messages", OK: true, Detail: "PostgreSQL " + s.Version + " sends pg_logical_emit_message records through pgoutput (messages 'true')"}
	}
	return Finding{Name: "logical decoding messages", Detail: "PostgreSQL " + s.Version + " cannot send logical decoding messages through pgoutput",
		Fix: "upgrade to PostgreSQL 14 or newer, or remove DecodeLogicalDecodingMessageContent from transforms",
		Err: fmt.Errorf("preflight: %w: transforms has DecodeLogicalDecodingMessageContent, whose logical decoding messages pgoutput sends from PostgreSQL 14 on; the server is %s (server_version_num %d): upgrade, or route outbox rows from a table instead", ErrServerVersion, s.Version, s.VersionNum)}
}

// failoverFinding: slot.failover needs PostgreSQL 17 (CREATE_REPLICATION_SLOT
// … FAILOVER, slot synchronization).
func (s Settings) failoverFinding() Finding {
	if s.VersionNum >= 170000 {
		return Finding{Name: "slot.failover", OK: true, Detail: "PostgreSQL " + s.Version + " synchronizes failover slots to standbys with sync_replication_slots = on"}
	}
	return Finding{Name: "slot.failover", Detail: "PostgreSQL " + s.Version + " has no failover slots",
		Fix: "upgrade to PostgreSQL 17 or newer, or set slot.failover=false",
		Err: fmt.Errorf("preflight: %w: slot.failover=true needs PostgreSQL 17 or newer, the server is %s (server_version_num %d): set slot.failover=false, or upgrade", ErrServerVersion, s.Version, s.VersionNum)}
}

// slotInvalidatedSQL is Slot.Invalidated read from s, a row of
// pg_replication_slots or of pg_get_replication_slots() (the same column
// names):
// invalidation_reason on 17+, conflicting on 16 (through to_jsonb, which
// yields NULL for a column the server does not have), "" when valid.
const slotInvalidatedSQL = `coalesce(to_jsonb(s)->>'invalidation_reason', CASE WHEN (to_jsonb(s)->>'conflicting')::bool THEN 'conflicting with recovery' ELSE '' END)`

// InspectSlot reads the slot's row from pg_replication_slots.
func InspectSlot(ctx context.Context, conn *pgx.Conn, name string) (Slot, error) {
	var s Slot
	var pid *int32
	var flush *string
	var wal *string
	// failover and synced exist from PostgreSQL 17 on: read through
	// to_jsonb, which yields NULL (false) on older servers.
	err := conn.QueryRow(ctx, `SELECT plugin, database, temporary, active, active_pid, confirmed_flush_lsn::text, wal_status,
		coalesce((to_jsonb(s)->>'failover')::bool, false), coalesce((to_jsonb(s)->>'synced')::bool, false),
		`+slotInvalidatedSQL+`
		FROM pg_replication_slots s WHERE slot_name = $1`, name).
		Scan(&s.Plugin, &s.Database, &s.Temporary, &s.Active, &pid, &flush, &wal, &s.Failover, &s.Synced, &s.Invalidated)
	if errors.Is(err, pgx.ErrNoRows) {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("preflight: reading slot %q: %w", name, err)
	}
	s.Exists = true
	if pid != nil {
		s.ActivePID = int(*pid)
	}
	if wal != nil {
		s.WALStatus = *wal
	}
	if flush != nil {
		if s.ConfirmedFlush, err = capture.ParseLSN(*flush); err != nil {
			return s, fmt.Errorf("preflight: slot %q confirmed_flush_lsn %q: %w", name, *flush, err)
		}
	}
	return s, nil
}

// CheckSlot says whether an existing slot can be streamed by this relay:
// plugin, database, wal_status and whether another connection holds it. The
// error says what to do. A missing slot is fine: the relay creates it.
func CheckSlot(s Slot, cfg *Config) error {
	if !s.Exists {
		return nil
	}
	drop := fmt.Sprintf("SELECT pg_drop_replication_slot('%s');", cfg.Slot)
	switch {
	case s.Plugin != "pgoutput":
		return fmt.Errorf("preflight: %w: slot %q uses plugin %q; outboxrelay reads pgoutput: choose another slot.name, or drop it with %s", ErrSlotIncompat, cfg.Slot, s.Plugin, drop)
	case s.Database != cfg.DBName:
		return fmt.Errorf("preflight: %w: slot %q belongs to database %q, not %q (database.dbname): choose another slot.name", ErrSlotIncompat, cfg.Slot, s.Database, cfg.DBName)
	case s.Invalidated != "" && s.Invalidated != "wal_removed":
		return fmt.Errorf("preflight: %w: slot %q was invalidated by the server (%s): %s; events after %s can no longer be decoded from it. The relay does not create it again by itself (what was committed in between would be skipped): fix the cause, drop it with %s and restart with snapshot.mode=when_needed (the outbox tables are read again)",
			ErrSlotIncompat, cfg.Slot, s.Invalidated, invalidationCause(s.Invalidated), s.ConfirmedFlush, drop)
	case s.WALStatus == "lost":
		return fmt.Errorf("preflight: %w: slot %q lost WAL it needed (wal_status=lost; max_slot_wal_keep_size too small?): events after %s are gone from the server; drop it with %s and restart with snapshot.mode=when_needed (the outbox tables are read again)", ErrSlotIncompat, cfg.Slot, s.ConfirmedFlush, drop)
	case s.Active:
		return fmt.Errorf("preflight: %w: slot %q is active on backend pid %d: stop the other consumer (another outboxrelay or Debezium), or end it with SELECT pg_terminate_backend(%d);", ErrSlotInUse, cfg.Slot, s.ActivePID, s.ActivePID)
	}
	return nil
}

// invalidationCause says what a slot's invalidation_reason means and what
// prevents it.
func invalidationCause(reason string) string {
	switch reason {
	case "wal_level_insufficient":
		return "wal_level was lowered below logical on the primary; set it back (ALTER SYSTEM SET wal_level = logical; and restart the primary)"
	case "rows_removed":
		return "the primary removed rows the slot still needed (a recovery conflict); set hot_standby_feedback = on on the standby and let it stream through a physical slot (primary_slot_name)"
	case "idle_timeout":
		return "the slot was idle longer than idle_replication_slot_timeout; raise it or keep the relay running"
	case "conflicting with recovery":
		return "a recovery conflict on the standby: wal_level lowered below logical on the primary, or rows the slot needed removed there (set hot_standby_feedback = on with a physical slot)"
	}
	return "see the server's log"
}

// publisher runs the publication's DDL: on database.hostname, or, when
// that is a hot standby (read-only), on database.primary.hostname, and
// then waits until the standby replayed it.
type publisher struct {
	conn    *pgx.Conn // database.hostname
	standby bool      // conn is a hot standby
	// primary is database.primary.hostname on a standby, its system
	// identifier the standby's; nil when it could not be reached
	// (primaryErr says why): decoding on the standby does not need it,
	// only DDL does.
	primary    *pgx.Conn
	primaryErr error
	cfg        *Config
	log        *slog.Logger
}

// errPrimaryUnreachable: the publication's DDL must run on
// database.primary.hostname, which could not be reached. It wraps the
// connection's error, so a refused or timed-out connection is retried.
var errPrimaryUnreachable = errors.New("database.primary.hostname is unreachable")

// connectPrimary connects to database.primary.hostname and checks that it
// is a primary of the standby's cluster (postgres.ErrNotThePrimary stops
// the relay: another cluster, whose WAL positions the janitor's rule
// would compare, or a server in recovery or read-only, which can run
// none of what the relay needs the primary for). An unreachable or
// refusing primary is only logged: the standby decodes without it.
func (p *publisher) connectPrimary(ctx context.Context) error {
	conn, err := p.cfg.ConnectPrimary(ctx, p.conn)
	switch {
	case errors.Is(err, postgres.ErrNotThePrimary):
		return fmt.Errorf("preflight: %w", err)
	case err != nil && ctx.Err() != nil:
		return ctx.Err()
	case err != nil && !postgres.Retryable(err):
		// Reached, and refused (credentials, pg_hba, EXECUTE on
		// pg_control_system() revoked): err says the fix.
		p.primaryErr = err
		p.log.Warn("preflight: database.hostname is a hot standby and database.primary.hostname refused the relay (see err for the fix); decoding on the standby goes on, what needs the primary fails until it is fixed",
			"primary", p.cfg.Primary().Where(), "err", err)
		return nil
	case err != nil:
		p.primaryErr = err
		p.log.Warn("preflight: database.hostname is a hot standby and database.primary.hostname cannot be reached now; decoding on the standby goes on, what needs the primary waits for it",
			"primary", p.cfg.Primary().Where(), "err", err)
		return nil
	}
	p.primary = conn
	return nil
}

func (p *publisher) close() {
	if p.primary != nil {
		p.primary.Close(context.Background())
	}
}

// on names, for messages, the server the DDL runs on when that is not
// database.hostname: " on database.primary.hostname …", or "".
func (p *publisher) on() string {
	if p.standby {
		return " on database.primary.hostname " + p.cfg.Primary().Where() + " (database.hostname is a hot standby)"
	}
	return ""
}

// exec runs stmt. On a standby it runs on the primary, with
// synchronous_commit=local so that its commit is in the primary's WAL when
// it returns, and then waits until the standby has replayed past the
// primary's pg_current_wal_lsn(): only then does the standby's catalog,
// read next, show the change.
func (p *publisher) exec(ctx context.Context, stmt string) error {
	if !p.standby {
		if _, err := p.conn.Exec(ctx, stmt); err != nil && !p.made(err, stmt) {
			return &ddlRefusal{err: err}
		}
		return nil
	}
	if p.primary == nil {
		return fmt.Errorf("preflight: %s must run%s: %w: %w", stmt, p.on(), errPrimaryUnreachable, p.primaryErr)
	}
	if _, err := p.primary.Exec(ctx, `SET synchronous_commit = local`); err != nil {
		return fmt.Errorf("SET synchronous_commit = local: %w", err)
	}
	if _, err := p.primary.Exec(ctx, stmt); err != nil && !p.made(err, stmt) {
		return &ddlRefusal{err: err}
	}
	var lsn string
	if err := p.primary.QueryRow(ctx, `SELECT pg_current_wal_lsn()::text`).Scan(&lsn); err != nil {
		return fmt.Errorf("reading pg_current_wal_lsn() after it: %w", err)
	}
	promoted, err := p.waitReplayed(ctx, lsn, stmt)
	if err != nil || !promoted {
		return err
	}
	// Promoted while it waited: the WAL of the primary's DDL may be lost
	// with the old primary (synchronous_commit = local). Run it again on
	// database.hostname, now the primary: CREATE answers 42710 when it
	// was replayed (made), ALTER … SET TABLE sets the same tables.
	p.standby = false
	p.log.Info("preflight: database.hostname was promoted while waiting for its replay; the publication's DDL runs there", "statement", stmt)
	return p.exec(ctx, stmt)
}

// made says whether err is CREATE PUBLICATION's "already exists"
// (42710), and logs it: the publication was made since the catalog was
// read, by another relay or a migration, or (on a standby, whose catalog
// the existence was read from) on the primary before the standby replayed
// it, as after a restart while replay was paused. The caller then waits
// for the replay as after its own CREATE and reads the publication again.
func (p *publisher) made(err error, stmt string) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "42710" {
		return false
	}
	p.log.Info("preflight: the publication exists already"+p.on()+"; reading it instead", "publication", p.cfg.Publication, "statement", stmt)
	return true
}

// ddlRefusal is exec's error when the server answered the statement
// itself with an error; everything else exec returns (the primary's
// connection lost, the standby's replay wait cancelled) is not one.
type ddlRefusal struct{ err error }

func (e *ddlRefusal) Error() string { return e.err.Error() }
func (e *ddlRefusal) Unwrap() error { return e.err }

// ddlFailed is exec's err as the preflight returns it. Only a refusal of
// the statement that no retry mends (a privilege, a table, a read-only
// server) becomes ErrPublication with refused's fix, which stops the
// relay. Anything else (the primary restarted or unreachable, the network
// dropped, a recovery conflict cancelled the replay wait, ctx ended) keeps
// its cause under %w, so that Retryable retries the session.
func ddlFailed(ctx context.Context, err error, stmt, on string, refused func(err error) error) error {
	if errors.Is(err, errPrimaryUnreachable) {
		return err
	}
	var r *ddlRefusal
	if errors.As(err, &r) && !Retryable(err) && ctx.Err() == nil {
		return refused(r.err)
	}
	return fmt.Errorf("preflight: %s%s: %w", stmt, on, err)
}

// waitReplayed waits until the standby replayed the primary's WAL up to
// lsn, or was promoted (promoted: then it has all the WAL it will ever
// replay, perhaps without the DDL's, and exec runs it again there). A
// paused or cut-off replay makes it wait, as decoding would: it WARNs
// every 30 s and ends with ctx.
func (p *publisher) waitReplayed(ctx context.Context, lsn, stmt string) (promoted bool, err error) {
	start := time.Now()
	warn := 30 * time.Second
	for {
		var done bool
		var replayed *string
		err := p.conn.QueryRow(ctx, `SELECT NOT pg_is_in_recovery(), coalesce(pg_last_wal_replay_lsn() >= $1::pg_lsn, false), pg_last_wal_replay_lsn()::text`, lsn).Scan(&promoted, &done, &replayed)
		if err != nil {
			return false, fmt.Errorf("waiting for database.hostname %s to replay %s (%s, run on the primary): %w", p.cfg.Where(), lsn, stmt, standbyError(err, true))
		}
		if promoted {
			return true, nil
		}
		if done {
			p.log.Info("preflight: the standby replayed the publication's DDL run on the primary", "statement", stmt, "primary_lsn", lsn, "waited", time.Since(start).Round(time.Millisecond).String())
			return false, nil
		}
		if time.Since(start) >= warn {
			p.log.Warn("preflight: waiting for the standby to replay the publication's DDL run on the primary (replay paused, or the standby cut off from the primary?)",
				"statement", stmt, "primary_lsn", lsn, "standby_replayed", deref(replayed), "waited", time.Since(start).Round(time.Second).String())
			warn += 30 * time.Second
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return "(none)"
	}
	return *s
}

// publicationTables returns the outbox tables the publication covers,
// creating or altering the publication as publication.autocreate.mode says.
func publicationTables(ctx context.Context, pub *publisher) ([]string, error) {
	conn, cfg, log := pub.conn, pub.cfg, pub.log
	candidates, err := IncludedTables(ctx, conn, cfg)
	if err != nil {
		return nil, err
	}
	exists, viaRoot, err := readPublication(ctx, conn, cfg.Publication)
	if err != nil {
		return nil, err
	}
	if !exists {
		if err := createPublication(ctx, pub, candidates); err != nil {
			return nil, err
		}
		// Read again: CREATE may have found it made already, with
		// options of its own (made).
		if _, viaRoot, err = readPublication(ctx, conn, cfg.Publication); err != nil {
			return nil, err
		}
	}
	published, err := queryStrings(ctx, conn, `SELECT schemaname || '.' || tablename FROM pg_publication_tables WHERE pubname = $1`, cfg.Publication)
	if err != nil {
		return nil, fmt.Errorf("preflight: reading tables of publication %q: %w", cfg.Publication, err)
	}
	in := map[string]bool{}
	for _, t := range published {
		in[t] = true
	}
	var covered, missing []string
	for _, t := range candidates {
		if in[t] {
			covered = append(covered, t)
		} else {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 && !viaRoot {
		// A partitioned table's changes come under its partitions' names
		// unless the publication publishes them via the root.
		partitioned, err := queryStrings(ctx, conn, `SELECT n.nspname || '.' || c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE c.relkind = 'p' AND n.nspname || '.' || c.relname = ANY($1) ORDER BY 1`, missing)
		if err != nil {
			return nil, fmt.Errorf("preflight: reading partitioned tables: %w", err)
		}
		if len(partitioned) > 0 {
			return nil, fmt.Errorf("preflight: %w: %s is partitioned and publication %q publishes its rows under the names of its partitions; outboxrelay needs them under the table's own name: run ALTER PUBLICATION %s SET (publish_via_partition_root = true);",
				ErrPublication, strings.Join(partitioned, ", "), cfg.Publication, postgres.QuoteIdent(cfg.Publication))
		}
	}
	if len(missing) > 0 {
		if cfg.AutoCreate == PublicationFiltered {
			stmt := fmt.Sprintf("ALTER PUBLICATION %s SET TABLE %s", postgres.QuoteIdent(cfg.Publication), strings.Join(postgres.QuoteTables(candidates), ", "))
			if err := pub.exec(ctx, stmt); err != nil {
				return nil, ddlFailed(ctx, err, stmt, pub.on(), func(err error) error {
					return fmt.Errorf("preflight: %w: %s (publication.autocreate.mode=filtered)%s: %v", ErrPublication, stmt, pub.on(), err)
				})
			}
			log.Info("publication altered", "publication", cfg.Publication, "tables", candidates)
			return candidates, nil
		}
		return nil, fmt.Errorf("preflight: %w: publication %q does not cover %s; run%s as an owner of the tables: ALTER PUBLICATION %s ADD TABLE %s;",
			ErrPublication, cfg.Publication, strings.Join(missing, ", "), pub.on(), postgres.QuoteIdent(cfg.Publication), strings.Join(postgres.QuoteTables(missing), ", "))
	}
	return covered, nil
}

// readPublication says whether publication name exists on conn, and
// whether it publishes via the partition root.
func readPublication(ctx context.Context, conn *pgx.Conn, name string) (exists, viaRoot bool, err error) {
	err = conn.QueryRow(ctx, `SELECT true, pubviaroot FROM pg_publication WHERE pubname = $1`, name).Scan(&exists, &viaRoot)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return false, false, fmt.Errorf("preflight: reading publication %q: %w", name, err)
	}
	return exists, viaRoot, nil
}

func createPublication(ctx context.Context, pub *publisher, tables []string) error {
	cfg := pub.cfg
	forTables := "FOR TABLE " + strings.Join(postgres.QuoteTables(tables), ", ")
	if len(tables) == 0 {
		forTables = "" // messages only: pgoutput needs a publication, not a table in it
	}
	// Via the root: a partitioned outbox's rows then come under its own
	// name; for other tables the option changes nothing.
	const with = " WITH (publish_via_partition_root = true)"
	var stmt string
	switch cfg.AutoCreate {
	case PublicationDisabled:
		return fmt.Errorf("preflight: %w: publication %q does not exist and publication.autocreate.mode is disabled; run%s: CREATE PUBLICATION %s %s;",
			ErrPublication, cfg.Publication, pub.on(), postgres.QuoteIdent(cfg.Publication), forTables)
	case PublicationFiltered:
		stmt = fmt.Sprintf("CREATE PUBLICATION %s %s", postgres.QuoteIdent(cfg.Publication), forTables) + with
	case PublicationAllTables:
		stmt = fmt.Sprintf("CREATE PUBLICATION %s FOR ALL TABLES", postgres.QuoteIdent(cfg.Publication)) + with
	case PublicationNoTables:
		stmt = fmt.Sprintf("CREATE PUBLICATION %s", postgres.QuoteIdent(cfg.Publication)) + with
	}
	if err := pub.exec(ctx, stmt); err != nil {
		return ddlFailed(ctx, err, stmt, pub.on(), func(err error) error {
			return fmt.Errorf("preflight: %w: %s (publication.autocreate.mode=%s) failed%s: %v; create it as an administrator%s, or set publication.autocreate.mode=disabled",
				ErrPublication, stmt, cfg.AutoCreate, pub.on(), err, pub.on())
		})
	}
	pub.log.Info("publication created", "publication", cfg.Publication, "statement", stmt, "on_primary", pub.standby)
	return nil
}

// IncludedTables lists, sorted, the outbox tables of table.include.list
// (postgres.IncludedTables) and refuses a list that matches no table,
// unless outbox.messages.only says the events are only logical decoding
// messages, and then refuses one that matches a table: what the relay
// routes is never a guess.
func IncludedTables(ctx context.Context, conn *pgx.Conn, cfg *Config) ([]string, error) {
	tables, err := postgres.IncludedTables(ctx, conn, &cfg.Config)
	if err != nil {
		return nil, fmt.Errorf("preflight: %w", err)
	}
	return tables, checkIncluded(cfg, tables)
}

// checkIncluded is IncludedTables' rule on the tables found.
func checkIncluded(cfg *Config, tables []string) error {
	switch {
	case cfg.MessagesOnly && len(tables) > 0:
		return fmt.Errorf("preflight: %s is true but table.include.list %q matches %s; set the list to match no table, or remove %s to route the rows too",
			KeyMessagesOnly, cfg.TablesText, strings.Join(tables, ", "), KeyMessagesOnly)
	case len(tables) > 0 || cfg.MessagesOnly:
		return nil
	case cfg.Messages:
		return fmt.Errorf("preflight: %w: no table of database %q matches table.include.list %q; create the outbox table or fix the list, or, if the events are only logical decoding messages, set %s=true",
			postgres.ErrNoOutboxTables, cfg.DBName, cfg.TablesText, KeyMessagesOnly)
	}
	return fmt.Errorf("preflight: %w", postgres.RequireTables(&cfg.Config, tables))
}

func queryStrings(ctx context.Context, conn *pgx.Conn, sql string, args ...any) ([]string, error) {
	rows, err := conn.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
