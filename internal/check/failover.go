package check

import (
	"context"
	"fmt"
	"strings"

	"github.com/outboxrelay/outboxrelay/postgres"
	"github.com/outboxrelay/outboxrelay/replication"
)

// failover checks that the slot will survive a failover (slot.failover,
// PostgreSQL 17+): the slot has failover on, the primary waits for the
// standbys' physical slots before it sends changes to the relay
// (synchronized_standby_slots), and each standby named in
// database.hostname synchronizes slots: sync_replication_slots,
// hot_standby_feedback, primary_slot_name in that list, a dbname in
// primary_conninfo, and its copy of the slot.
func (c *checker) failover(ctx context.Context, slot replication.Slot) {
	name := "slot " + c.pg.Slot + " failover"
	switch {
	case !slot.Exists:
		c.pass(name, "the relay creates the slot with failover enabled")
	case slot.Failover:
		c.pass(name, "enabled")
	default:
		c.pass(name, "not enabled yet; the relay enables it when it starts (ALTER_REPLICATION_SLOT "+c.pg.Slot+" (FAILOVER true))")
	}
	var standbySlots string
	_ = c.conn.QueryRow(ctx, `SELECT current_setting('synchronized_standby_slots')`).Scan(&standbySlots)
	if strings.TrimSpace(standbySlots) == "" {
		c.fail("synchronized_standby_slots", "empty: the relay may receive changes a standby has not, and after a failover that standby's copy of the slot would be behind what Kafka has",
			"ALTER SYSTEM SET synchronized_standby_slots = '<the standby''s physical slot>'; SELECT pg_reload_conf(); -- on the primary")
	} else {
		c.standbySlotsExist(ctx, standbySlots)
	}
	standbys := 0
	for i := 0; i < c.pg.Hosts(); i++ {
		if c.standby(ctx, c.pg.ForHost(i), standbySlots) {
			standbys++
		}
	}
	if standbys == 0 {
		c.fail("standbys", "none of database.hostname is a reachable standby, so its slot synchronization cannot be checked",
			"list the standby after the primary in database.hostname, e.g. \"database.hostname\": \"primary,standby\"")
	}
}

// standby checks one host if it is a standby; false when it is not one
// (the primary) or cannot be reached (reported).
func (c *checker) standby(ctx context.Context, h *postgres.Config, standbySlots string) bool {
	conn, err := h.Connect(ctx)
	if err != nil {
		c.fail("standby "+h.Where(), err.Error(), "")
		return false
	}
	defer conn.Close(context.Background())
	var recovery bool
	var sync, feedback, slotName string
	err = conn.QueryRow(ctx, `SELECT pg_is_in_recovery(), current_setting('sync_replication_slots'), current_setting('hot_standby_feedback'),
		current_setting('primary_slot_name')`).Scan(&recovery, &sync, &feedback, &slotName)
	if err != nil || !recovery {
		if err != nil {
			c.fail("standby "+h.Where(), err.Error(), "")
		}
		return false
	}
	where := "standby " + h.Where()
	set := func(setting, value string) string {
		return fmt.Sprintf("ALTER SYSTEM SET %s = %s; SELECT pg_reload_conf(); -- on %s", setting, value, h.Where())
	}
	c.expect(where+" sync_replication_slots", sync == "on", sync, set("sync_replication_slots", "on"))
	c.expect(where+" hot_standby_feedback", feedback == "on", feedback, set("hot_standby_feedback", "on"))
	listed := slotName != "" && contains(strings.Split(strings.ReplaceAll(standbySlots, " ", ""), ","), slotName)
	c.expect(where+" primary_slot_name", listed, orDash(slotName)+" (the primary's synchronized_standby_slots: "+orDash(standbySlots)+")",
		"create a physical slot for this standby on the primary, name it here and list it in the primary's synchronized_standby_slots: "+set("primary_slot_name", "'<slot>'"))
	// primary_conninfo holds a password: only superusers and
	// pg_read_all_settings may read it.
	var conninfo string
	if err := conn.QueryRow(ctx, `SELECT current_setting('primary_conninfo')`).Scan(&conninfo); err != nil {
		c.fail(where+" primary_conninfo", err.Error(), "GRANT pg_read_all_settings TO "+postgres.QuoteIdent(h.User)+"; -- so check can read it (it must name a dbname)")
	} else {
		named := strings.Contains(strings.ReplaceAll(conninfo, " ", ""), "dbname=") || strings.Contains(conninfo, "/"+h.DBName)
		c.expect(where+" primary_conninfo", named, "names a database: "+fmt.Sprint(named),
			"add dbname="+h.DBName+" to primary_conninfo: slot synchronization connects to a database")
	}
	copy, err := replication.InspectSlot(ctx, conn, c.pg.Slot)
	switch {
	case err != nil:
		c.fail(where+" slot "+c.pg.Slot, err.Error(), "")
	case !copy.Exists || !copy.Synced:
		c.fail(where+" slot "+c.pg.Slot, "no synchronized copy yet (the slot must exist with failover on, and the standby must have caught up)",
			"start the relay with slot.failover=true, then check again; on the standby: SELECT slot_name, synced FROM pg_replication_slots;")
	default:
		c.pass(where+" slot "+c.pg.Slot, fmt.Sprintf("synchronized, confirmed_flush_lsn %s", copy.ConfirmedFlush))
	}
	return true
}

func (c *checker) expect(name string, ok bool, detail, fix string) {
	if ok {
		c.pass(name, detail)
		return
	}
	c.fail(name, detail, fix)
}

// standbySlotsExist: every slot synchronized_standby_slots names must be
// a physical slot here, or logical decoding waits for it forever (as on a
// promoted standby that kept its old primary's setting).
func (c *checker) standbySlotsExist(ctx context.Context, list string) {
	var missing []string
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		var typ string
		if err := c.conn.QueryRow(ctx, `SELECT slot_type FROM pg_replication_slots WHERE slot_name = $1`, name).Scan(&typ); err != nil || typ != "physical" {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		c.pass("synchronized_standby_slots", list)
		return
	}
	c.fail("synchronized_standby_slots", list+": no physical slot "+strings.Join(missing, ", ")+" here, so logical decoding waits for it and the relay receives nothing",
		"ALTER SYSTEM SET synchronized_standby_slots = '<the physical slots of this server''s standbys>'; SELECT pg_reload_conf(); -- or '' without a standby")
}
