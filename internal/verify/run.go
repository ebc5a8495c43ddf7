package verify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/jackc/pgx/v5"
	kafka "github.com/segmentio/kafka-go"

	"github.com/outboxrelay/outboxrelay/internal/setup"
	"github.com/outboxrelay/outboxrelay/postgres"
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
	// Emitted, when set, is an emitted-events list (ReadEmitted) checked
	// instead of the outbox tables: the events of an outbox without a
	// table, written as logical decoding messages.
	Emitted io.Reader
}

// Run is outboxrelay verify: it reads the outbox table(s) and every topic
// their rows route to, with set's configuration, writes the report to w,
// and returns an error when anything is missing or out of order
// (duplicates alone are at-least-once delivery).
func Run(ctx context.Context, set *setup.Setup, opt Options, w io.Writer) error {
	if err := opt.check(); err != nil {
		return err
	}
	dialer, conn, err := open(ctx, set)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	topics := map[string]bool{}
	var tables []string
	var events []Event
	if opt.Emitted != nil {
		tables = []string{"(emitted events list)"}
		events, err = emittedEvents(opt.Emitted, set.Router, topics)
	} else {
		tables, events, err = tableEvents(ctx, conn, set, opt, topics)
	}
	if err != nil {
		return err
	}
	var names []string
	for t := range topics {
		names = append(names, t)
	}
	read := Topics
	if set.ExactlyOnceRequired {
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

// open makes set's Kafka dialer and connects to its database; errors
// have the configuration's secrets scrubbed.
func open(ctx context.Context, set *setup.Setup) (*kafka.Dialer, *pgx.Conn, error) {
	dialer, err := set.Kafka.Dialer()
	if err != nil {
		return nil, nil, errors.New(set.File.Scrub(err.Error()))
	}
	conn, err := set.Postgres.Connect(ctx)
	if err != nil {
		return nil, nil, errors.New(set.File.Scrub("verify: " + err.Error()))
	}
	return dialer, conn, nil
}

// check refuses options that would be silently ignored: --where and
// --order-by select and order table rows, and an emitted-events list has
// none.
func (o Options) check() error {
	if o.Emitted != nil && (o.Where != "" || o.OrderBy != "") {
		return errors.New("verify: --where and --order-by select and order outbox table rows; with --emitted the list's lines are the events, in their order: leave them out")
	}
	return nil
}

// emittedEvents reads an emitted-events list and adds the topics of its
// route values.
func emittedEvents(r io.Reader, rt *router.Router, topics map[string]bool) ([]Event, error) {
	list, err := ReadEmitted(r)
	if err != nil {
		return nil, err
	}
	events := make([]Event, len(list))
	for i, e := range list {
		events[i] = e.Event
		topic, err := rt.Topic([]byte(e.Route))
		if err != nil {
			return nil, fmt.Errorf("verify: emitted event %s: route value %q: %w", e.ID, e.Route, err)
		}
		topics[topic] = true
	}
	return events, nil
}

// tableEvents reads the events of the outbox tables and adds the topics
// their route values give.
func tableEvents(ctx context.Context, conn *pgx.Conn, set *setup.Setup, opt Options, topics map[string]bool) ([]string, []Event, error) {
	rcfg := set.Router.Config()
	tables, err := replication.IncludedTables(ctx, conn, &set.Postgres)
	if err != nil {
		return nil, nil, err
	}
	if len(tables) == 0 { // outbox.messages.only
		return nil, nil, fmt.Errorf("verify: no outbox table matches table.include.list %q and %s is true: the events are logical decoding messages, which leave no table to read; pass --emitted FILE, the list of the events the application emitted",
			set.Postgres.TablesText, replication.KeyMessagesOnly)
	}
	var events []Event
	for _, table := range tables {
		schema, name, _ := strings.Cut(table, ".")
		qualified := postgres.QuoteIdent(schema) + "." + postgres.QuoteIdent(name)
		evs, err := Outbox(ctx, conn, OutboxQuery{
			Table: qualified, IDColumn: rcfg.EventIDField, KeyColumn: rcfg.EventKeyField, OrderBy: opt.OrderBy, Where: opt.Where,
		})
		if err != nil {
			return nil, nil, err
		}
		events = append(events, evs...)
		if err := routedTopics(ctx, conn, set.Router, qualified, rcfg.RouteByField, opt.Where, topics); err != nil {
			return nil, nil, err
		}
	}
	return tables, events, nil
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
