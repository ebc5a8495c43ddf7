package verify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/outboxrelay/outboxrelay/internal/setup"
	"github.com/outboxrelay/outboxrelay/replication"
	"github.com/outboxrelay/outboxrelay/router"
)

// Options narrow and order what Run compares.
type Options struct {
	// OrderBy is an SQL expression increasing with commit order, cast to
	// bigint; empty: the rows' commit timestamps.
	OrderBy string
	// Where selects the rows to check; empty: all.
	Where string
}

// Run is outboxrelay verify: it reads the outbox table(s) and every topic
// their rows route to, with set's configuration, writes the report to w,
// and returns an error when anything is missing or out of order
// (duplicates alone are at-least-once delivery).
func Run(ctx context.Context, set *setup.Setup, opt Options, w io.Writer) error {
	rcfg := set.Router.Config()
	dialer, err := set.Kafka.Dialer()
	if err != nil {
		return errors.New(set.File.Scrub(err.Error()))
	}
	conn, err := set.Postgres.Connect(ctx)
	if err != nil {
		return errors.New(set.File.Scrub("verify: " + err.Error()))
	}
	defer conn.Close(context.Background())
	tables, err := replication.IncludedTables(ctx, conn, &set.Postgres)
	if err != nil {
		return err
	}
	var events []Event
	topics := map[string]bool{}
	for _, table := range tables {
		schema, name, _ := strings.Cut(table, ".")
		qualified := replication.QuoteIdent(schema) + "." + replication.QuoteIdent(name)
		evs, err := Outbox(ctx, conn, OutboxQuery{
			Table: qualified, IDColumn: rcfg.EventIDField, KeyColumn: rcfg.EventKeyField, OrderBy: opt.OrderBy, Where: opt.Where,
		})
		if err != nil {
			return err
		}
		events = append(events, evs...)
		if err := routedTopics(ctx, conn, set.Router, qualified, rcfg.RouteByField, opt.Where, topics); err != nil {
			return err
		}
	}
	var names []string
	for t := range topics {
		names = append(names, t)
	}
	read := Topics
	if set.ExactlyOnce.Required {
		read = TopicsCommitted // what a read_committed consumer sees
	}
	deliveries, err := read(ctx, dialer, set.Kafka.Brokers[0], names, "id")
	if err != nil {
		return err
	}
	report := Check(events, deliveries)
	fmt.Fprintf(w, "tables %s; topics %s\n%s\n", strings.Join(tables, ", "), strings.Join(names, ", "), report)
	if !report.OK() {
		return fmt.Errorf("verify: %d events missing, %d aggregates out of order", len(report.Missing), len(report.OutOfOrder))
	}
	return nil
}

// routedTopics adds the topics the table's distinct route values go to.
// Rows whose route gives no legal topic are poison rows; they are reported
// as missing, not here.
func routedTopics(ctx context.Context, conn *pgx.Conn, rt *router.Router, table, routeColumn, where string, into map[string]bool) error {
	sql := fmt.Sprintf(`SELECT DISTINCT %s::text FROM %s`, pgx.Identifier{routeColumn}.Sanitize(), table)
	if where != "" {
		sql += " WHERE " + where
	}
	rows, err := conn.Query(ctx, sql)
	if err != nil {
		return fmt.Errorf("verify: reading route values (%s) of %s: %w", routeColumn, table, err)
	}
	var v *string
	_, err = pgx.ForEachRow(rows, []any{&v}, func() error {
		if v == nil {
			return nil
		}
		if topic, err := rt.Topic([]byte(*v)); err == nil {
			into[topic] = true
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("verify: reading route values of %s: %w", table, err)
	}
	return nil
}
