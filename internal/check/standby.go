package check

import (
	"context"
	"fmt"

	"github.com/outboxrelay/outboxrelay/postgres"
)

// hotStandby checks a database.hostname that is a hot standby (PostgreSQL
// 16+, with database.primary.hostname; preflight's finding covers the
// rest): hot_standby_feedback (without it the primary removes rows the
// slot still needs and the slot is invalidated), a physical slot on the
// primary, max_standby_streaming_delay, the replay (paused, lag), and the
// primary connection: a primary, wal_level=logical, and EXECUTE on
// pg_log_standby_snapshot() for a quick slot creation.
func (c *checker) hotStandby(ctx context.Context) {
	where := "standby " + c.pg.Where()
	set := func(setting, value string) string {
		return fmt.Sprintf("ALTER SYSTEM SET %s = %s; SELECT pg_reload_conf(); -- on %s", setting, value, c.pg.Where())
	}
	var feedback, slotName, delay, paused string
	var behind *int64
	var since *float64
	err := c.conn.QueryRow(ctx, `SELECT current_setting('hot_standby_feedback'), current_setting('primary_slot_name'), current_setting('max_standby_streaming_delay'),
		pg_get_wal_replay_pause_state(), (pg_last_wal_receive_lsn() - pg_last_wal_replay_lsn())::bigint,
		extract(epoch FROM now() - pg_last_xact_replay_timestamp())::float8`).Scan(&feedback, &slotName, &delay, &paused, &behind, &since)
	if err != nil {
		c.fail(where, err.Error(), "GRANT pg_read_all_settings TO "+postgres.QuoteIdent(c.pg.User)+"; -- so check can read the standby's settings")
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
	lag := "replayed everything received"
	if behind != nil && *behind > 0 {
		lag = humanBytes(*behind) + " received and not replayed yet"
	}
	if since != nil {
		lag += fmt.Sprintf("; last replayed transaction committed %.0f s ago", *since)
	}
	if paused != "not paused" {
		c.fail(where+" replay", "paused ("+paused+"): the relay receives nothing committed since; "+lag, "SELECT pg_wal_replay_resume(); -- on "+c.pg.Where())
	} else {
		c.pass(where+" replay", lag)
	}
	c.primary(ctx)
}

// primary checks database.primary.hostname.
func (c *checker) primary(ctx context.Context) {
	p := c.pg.Primary()
	name := "primary " + p.Where()
	conn, err := p.Connect(ctx)
	if err != nil {
		c.fail(name+" connection", err.Error(), "set database.primary.hostname and database.primary.port to the standby's primary")
		return
	}
	defer conn.Close(context.Background())
	var recovery, snapshot bool
	var walLevel string
	err = conn.QueryRow(ctx, `SELECT pg_is_in_recovery(), current_setting('wal_level'), has_function_privilege('pg_log_standby_snapshot()', 'EXECUTE')`).Scan(&recovery, &walLevel, &snapshot)
	if err != nil {
		c.fail(name+" connection", err.Error(), "")
		return
	}
	c.expect(name+" connection", !recovery, c.pg.User+"@"+p.Where()+", in recovery: "+fmt.Sprint(recovery),
		"database.primary.hostname must name the primary, not another standby")
	c.expect(name+" wal_level", walLevel == "logical", walLevel+" (a standby decodes only what a primary with wal_level=logical writes; lowering it invalidates the standby's slot)",
		"ALTER SYSTEM SET wal_level = logical; -- on the primary, then restart it")
	if snapshot {
		c.pass(name+" pg_log_standby_snapshot()", "EXECUTE granted: the slot is created on the standby usually within a second, unless a transaction is open on the primary")
	} else {
		c.warn(name+" pg_log_standby_snapshot()", "no EXECUTE for "+c.pg.User+": creating the slot on the standby waits for the primary's next running-xacts record (15 s or more on an idle primary)",
			"GRANT EXECUTE ON FUNCTION pg_log_standby_snapshot() TO "+postgres.QuoteIdent(c.pg.User)+"; -- on the primary")
	}
}
