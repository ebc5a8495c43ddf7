package main

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"strings"

	ddl "github.com/outboxrelay/outboxrelay/sql"
)

// setup creates the example's tables in the outbox table's schema, the
// publication outboxrelay streams from, and the relay role's grants.
func setup(ctx context.Context, args []string) error {
	fl := flag.NewFlagSet("setup", flag.ContinueOnError)
	publication := fl.String("publication", "orders_example", "publication to create (the connector's publication.name)")
	role := fl.String("relay-role", "debezium", "the relay's role (database.user), granted SELECT on the outbox")
	e, err := parseFlags(ctx, fl, args)
	if err != nil {
		return err
	}
	defer e.pool.Close()
	processed, err := fs.ReadFile(ddl.Files, "processed_events.sql")
	if err != nil {
		return err
	}
	_, outboxName, _ := strings.Cut(e.opts.Table, ".")
	stmts := []string{
		`CREATE SCHEMA IF NOT EXISTS "` + e.schema + `"`,
		`CREATE TABLE IF NOT EXISTS ` + e.table("orders") + ` (
			id          uuid PRIMARY KEY,
			order_ref   text NOT NULL UNIQUE, -- the client's reference: a double submit reuses it
			customer_id uuid NOT NULL,
			total_cents integer NOT NULL,
			placed_at   timestamptz NOT NULL DEFAULT now())`,
		// The polling article's outbox table, unchanged.
		`CREATE TABLE IF NOT EXISTS ` + e.table(outboxName) + ` (
			id BIGSERIAL PRIMARY KEY,
			aggregate_id UUID NOT NULL,
			type TEXT NOT NULL,
			payload JSONB NOT NULL,
			created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
			dispatched_at TIMESTAMPTZ)`,
		// The span context of the request that wrote the row
		// (tracing.span.context.field's default name): outbox.Writer
		// fills it when the order is placed inside a span.
		`ALTER TABLE ` + e.table(outboxName) + ` ADD COLUMN IF NOT EXISTS tracingspancontext text`,
		// sql/processed_events.sql (outboxrelay sql prints it), in this schema.
		strings.ReplaceAll(string(processed), "public.", `"`+e.schema+`".`),
		`CREATE TABLE IF NOT EXISTS ` + e.table("loyalty_points") + ` (
			customer_id uuid PRIMARY KEY,
			points      bigint NOT NULL)`,
		`GRANT USAGE ON SCHEMA "` + e.schema + `" TO "` + *role + `"`,
		`GRANT SELECT ON ` + e.table(outboxName) + ` TO "` + *role + `"`,
		`DO $$BEGIN
			IF NOT EXISTS (SELECT 1 FROM pg_publication WHERE pubname = '` + *publication + `') THEN
				CREATE PUBLICATION "` + *publication + `" FOR TABLE ` + e.table(outboxName) + `;
			END IF; END$$`,
	}
	for _, s := range stmts {
		if _, err := e.pool.Exec(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", strings.SplitN(strings.TrimSpace(s), "\n", 2)[0], err)
		}
	}
	fmt.Printf("setup: tables orders, %s, processed_events, loyalty_points in schema %s; publication %s\n", outboxName, e.schema, *publication)
	return nil
}
