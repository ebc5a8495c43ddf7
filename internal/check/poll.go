package check

import (
	"context"
	"errors"
	"fmt"

	"github.com/outboxrelay/outboxrelay/poll"
	"github.com/outboxrelay/outboxrelay/postgres"
)

// pollPostgres runs the PostgreSQL checks of poll mode: no slot, no
// publication, no wal_level or REPLICATION; SELECT and UPDATE on the
// tables (DELETE with the janitor), the dispatched and order columns, the
// partial index on undispatched rows, and the router's columns.
func (c *checker) pollPostgres(ctx context.Context, cfg poll.Config) {
	pg := c.pg
	conn, err := pg.Connect(ctx)
	if err != nil {
		c.fail("PostgreSQL connection", err.Error(), connFix(err))
		return
	}
	c.conn = conn
	c.pass("PostgreSQL connection", fmt.Sprintf("%s@%s:%d/%s", pg.User, pg.Host, pg.Port, pg.DBName))
	c.pass("capture mode", "poll (outbox.capture.mode): no replication slot, no publication, any wal_level, no REPLICATION attribute needed")
	// run's own refusal (poll.ErrStandby), word for word.
	if err := poll.RefuseStandby(ctx, conn, &pg.Config); errors.Is(err, poll.ErrStandby) {
		c.fail("hot standby", err.Error(), "point database.hostname at the primary, or set outbox.capture.mode=logical (PostgreSQL 16+, with database.primary.hostname)")
	} else if err != nil {
		c.fail("hot standby", err.Error(), "")
	}
	if !c.findTables(ctx) {
		return
	}
	c.privileges(ctx)
	for _, t := range c.tables {
		qt := postgres.QuoteTables([]string{t})[0]
		var upd bool
		// A column grant (GRANT UPDATE (dispatched_at)) is enough.
		if err := c.conn.QueryRow(ctx, `SELECT has_column_privilege($1::regclass, $2, 'UPDATE')`, qt, cfg.Dispatched).Scan(&upd); err != nil {
			c.fail("UPDATE on "+t, err.Error(), "")
		} else if upd {
			c.pass("UPDATE on "+t, "granted (poll mode sets "+cfg.Dispatched+")")
		} else {
			c.fail("UPDATE on "+t, "not granted to "+pg.User+": poll mode marks published rows in "+cfg.Dispatched,
				fmt.Sprintf("GRANT UPDATE (%s) ON %s TO %s;", postgres.QuoteIdent(cfg.Dispatched), qt, postgres.QuoteIdent(pg.User)))
		}
		if err := poll.CheckTable(ctx, c.conn, t, cfg); err != nil {
			c.fail("poll columns of "+t, err.Error(), "")
		} else {
			c.pass("poll columns of "+t, fmt.Sprintf("order %s, dispatched %s, event id %s", cfg.Order, cfg.Dispatched, cfg.IDColumn))
		}
		if ok, err := poll.HasIndex(ctx, c.conn, t, cfg.Dispatched); err != nil {
			c.fail("partial index on "+t, err.Error(), "")
		} else if ok {
			c.pass("partial index on "+t, "WHERE "+cfg.Dispatched+" IS NULL: an idle poll reads only the index")
		} else {
			c.fail("partial index on "+t, "no index WHERE "+cfg.Dispatched+" IS NULL: every poll scans the table",
				poll.IndexSQL(t, cfg.Order, cfg.IDColumn, cfg.Dispatched))
		}
		c.columns(ctx, t)
	}
	c.sampleRecords(ctx)
}
