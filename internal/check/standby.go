package check

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/outboxrelay/outboxrelay/capture"
	"github.com/outboxrelay/outboxrelay/postgres"
)

// hotStandby checks a database.hostname that is a hot standby (PostgreSQL
// 16+, with database.primary.hostname; preflight's finding covers the
// rest): hot_standby_feedback (without it the primary removes rows the
// slot still needs and the slot is invalidated), a physical slot on the
// primary, max_standby_streaming_delay, the replay (paused, how far behind
// the primary's WAL), the WAL receiver, and the primary connection: the
// standby's primary (the same system identifier), wal_level=logical, and
// EXECUTE on pg_log_standby_snapshot() for a quick slot creation.
func (c *checker) hotStandby(ctx context.Context) {
	where := "standby " + c.pg.Where()
	set := func(setting, value string) string {
		return fmt.Sprintf("ALTER SYSTEM SET %s = %s; SELECT pg_reload_conf(); -- on %s", setting, value, c.pg.Where())
	}
	var feedback, slotName, delay, paused string
	var replayed *string
	var behind *int64
	var since *float64
	// None of these needs a privilege: the settings are not restricted,
	// the functions are PUBLIC.
	err := c.conn.QueryRow(ctx, `SELECT current_setting('hot_standby_feedback'), current_setting('primary_slot_name'), current_setting('max_standby_streaming_delay'),
		pg_get_wal_replay_pause_state(), pg_last_wal_replay_lsn()::text, (pg_last_wal_receive_lsn() - pg_last_wal_replay_lsn())::bigint,
		extract(epoch FROM now() - pg_last_xact_replay_timestamp())::float8`).Scan(&feedback, &slotName, &delay, &paused, &replayed, &behind, &since)
	if err != nil {
		c.fail(where, err.Error(), "")
		return
	}
	c.expect(where+" hot_standby_feedback", feedback == "on", feedback+" (without it the primary's VACUUM removes rows the slot still needs, and the standby invalidates the slot)", set("hot_standby_feedback", "on"))
	if slotName == "" {
		c.warn(where+" primary_slot_name", "empty: hot_standby_feedback holds rows back on the primary only while the standby is connected; after a disconnection the slot can be invalidated (rows_removed)",
			"SELECT pg_create_physical_replication_slot('<name>'); -- on the primary, then "+set("primary_slot_name", "'<name>'"))
	} else {
		c.pass(where+" primary_slot_name", slotName)
	}
	if delay == "-1" {
		c.warn(where+" max_standby_streaming_delay", "-1: replay waits without limit behind a conflicting query on the standby (the relay's initial snapshot, a report), and the relay receives nothing new meanwhile",
			set("max_standby_streaming_delay", "'30s'"))
	} else {
		c.pass(where+" max_standby_streaming_delay", delay+" (a query on the standby that conflicts with replay longer than this is cancelled; the relay retries its session)")
	}
	p := c.readPrimary(ctx)
	c.replay(where, paused, p.behind(replayed), behind, since)
	c.walReceiver(ctx, where)
	c.reportPrimary(ctx, p)
}

// replay is the replay line: ✗ when paused; how far the replay is behind
// the primary's WAL (primary − standby: a standby cut off from its primary
// stops receiving and replaying alike, so received − replayed alone shows
// nothing), what was received and not replayed, and the age of the last
// replayed commit.
func (c *checker) replay(where, paused, primaryLag string, received *int64, since *float64) {
	lag := primaryLag
	if received != nil && *received > 0 {
		lag += "; " + humanBytes(*received) + " received and not replayed yet"
	}
	if since != nil {
		lag += fmt.Sprintf("; last replayed transaction committed %.0f s ago", *since)
	}
	if paused != "not paused" {
		c.fail(where+" replay", "paused ("+paused+"): the relay receives nothing committed since; "+lag, "SELECT pg_wal_replay_resume(); -- on "+c.pg.Where())
		return
	}
	c.pass(where+" replay", lag)
}

// walReceiver: the standby's WAL receiver streams from its upstream. Its
// status is visible only with pg_read_all_stats; without it the row still
// shows that a receiver runs.
func (c *checker) walReceiver(ctx context.Context, where string) {
	name := where + " WAL receiver"
	var running int
	var status *string
	if err := c.conn.QueryRow(ctx, `SELECT count(*)::int, max(status) FROM pg_stat_wal_receiver`).Scan(&running, &status); err != nil {
		c.fail(name, err.Error(), "")
		return
	}
	cutOff := "the standby receives no WAL from its primary, so the relay receives nothing committed since"
	fix := "check primary_conninfo on " + c.pg.Where() + ", the primary's pg_hba.conf (a replication line for the standby) and both servers' logs"
	switch {
	case running == 0:
		c.fail(name, "not running: "+cutOff, fix)
	case status == nil:
		c.warn(name, "running; its status is shown only to roles with pg_read_all_stats",
			"GRANT pg_read_all_stats TO "+postgres.QuoteIdent(c.pg.User)+"; -- on the primary (it replicates to the standby)")
	case *status == "streaming":
		c.pass(name, "streaming")
	default:
		c.fail(name, *status+": "+cutOff, fix)
	}
}

// primaryState is what check read on database.primary.hostname.
type primaryState struct {
	name     string
	conn     *pgx.Conn // nil when the connection failed (err)
	err      error
	recovery bool
	walLevel string
	snapshot bool    // EXECUTE on pg_log_standby_snapshot()
	current  *string // pg_current_wal_lsn(), unless in recovery
	// verified is VerifyPrimary's answer: nil when the primary is the
	// standby's (only then are their WAL positions comparable).
	verified error
}

// readPrimary connects to database.primary.hostname and reads it; the
// caller reports it (reportPrimary closes the connection).
func (c *checker) readPrimary(ctx context.Context) *primaryState {
	pc := c.pg.Primary()
	p := &primaryState{name: "primary " + pc.Where()}
	conn, err := pc.Connect(ctx)
	if err != nil {
		p.err = err
		return p
	}
	err = conn.QueryRow(ctx, `SELECT pg_is_in_recovery(), current_setting('wal_level'), has_function_privilege('pg_log_standby_snapshot()', 'EXECUTE'),
		CASE WHEN NOT pg_is_in_recovery() THEN pg_current_wal_lsn()::text END`).Scan(&p.recovery, &p.walLevel, &p.snapshot, &p.current)
	if err != nil {
		conn.Close(context.Background())
		p.err = err
		return p
	}
	p.conn = conn
	p.verified = c.pg.VerifyPrimary(ctx, c.conn, conn)
	return p
}

// behind says how far the standby's replay is behind the primary's WAL.
func (p *primaryState) behind(replayed *string) string {
	if p.err != nil || p.verified != nil || p.current == nil || replayed == nil {
		return "how far it is behind the primary's WAL is unknown (see the primary's lines)"
	}
	cur, err1 := capture.ParseLSN(*p.current)
	rep, err2 := capture.ParseLSN(*replayed)
	if err1 != nil || err2 != nil {
		return fmt.Sprintf("replayed %s, the primary at %s", *replayed, *p.current)
	}
	d := int64(0)
	if cur > rep {
		d = int64(cur - rep)
	}
	return fmt.Sprintf("%s behind the primary's WAL (pg_current_wal_lsn() on the primary %s, replayed %s)", humanBytes(d), *p.current, *replayed)
}

// reportPrimary checks database.primary.hostname: reachable, the
// standby's primary (the same system identifier, as run's preflight and
// the janitor require), wal_level, and EXECUTE on pg_log_standby_snapshot().
func (c *checker) reportPrimary(ctx context.Context, p *primaryState) {
	if p.conn == nil {
		c.fail(p.name+" connection", p.err.Error(), "set database.primary.hostname and database.primary.port to the standby's primary")
		return
	}
	defer p.conn.Close(context.Background())
	c.expect(p.name+" connection", !p.recovery, c.pg.User+"@"+c.pg.Primary().Where()+", in recovery: "+fmt.Sprint(p.recovery),
		"database.primary.hostname must name the primary, not another standby")
	if err := p.verified; err != nil {
		c.fail(p.name+" system identifier", err.Error(), "set database.primary.hostname and database.primary.port to the server "+c.pg.Where()+" replicates from")
	} else if id, err := postgres.SystemIdentifier(ctx, p.conn); err != nil {
		c.fail(p.name+" system identifier", err.Error(), "")
	} else {
		c.pass(p.name+" system identifier", id+", the same as database.hostname's: the standby's cluster")
	}
	c.expect(p.name+" wal_level", p.walLevel == "logical", p.walLevel+" (a standby decodes only what a primary with wal_level=logical writes; lowering it invalidates the standby's slot)",
		"ALTER SYSTEM SET wal_level = logical; -- on the primary, then restart it")
	if p.snapshot {
		c.pass(p.name+" pg_log_standby_snapshot()", "EXECUTE granted: the slot is created on the standby usually within a second, unless a transaction is open on the primary")
	} else {
		c.warn(p.name+" pg_log_standby_snapshot()", "no EXECUTE for "+c.pg.User+": creating the slot on the standby waits for the primary's next running-xacts record (15 s or more on an idle primary)",
			"GRANT EXECUTE ON FUNCTION pg_log_standby_snapshot() TO "+postgres.QuoteIdent(c.pg.User)+"; -- on the primary")
	}
}
