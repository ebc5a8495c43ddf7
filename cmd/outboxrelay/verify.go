package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxrelay/outboxrelay/internal/verify"
	"github.com/outboxrelay/outboxrelay/replication"
	"github.com/outboxrelay/outboxrelay/router"
	"github.com/outboxrelay/outboxrelay/sink"
)

// runVerify reads the outbox table(s) and every topic their rows route to,
// and reports by event id what is missing, what is duplicated and which
// aggregates saw first deliveries out of commit order. Exit 1 when anything
// is missing or out of order; duplicates alone are at-least-once delivery.
func runVerify(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fl := flag.NewFlagSet("verify", flag.ContinueOnError)
	fl.SetOutput(stderr)
	path := fl.String("config", "", "connector JSON file, as for run")
	brokers := fl.String("kafka-brokers", "", "Kafka bootstrap servers, as for run")
	orderBy := fl.String("order-by", "", "SQL expression increasing with commit order, cast to bigint (default: the rows' commit timestamps; needs track_commit_timestamp=on)")
	where := fl.String("where", "", "SQL condition selecting the rows to check, e.g. \"created_at > now() - interval '1 hour'\"")
	timeout := fl.Duration("timeout", 10*time.Minute, "give up after this long")
	if err := fl.Parse(args); err != nil {
		return usageError{err}
	}
	if *path == "" {
		return usageError{errors.New("verify: --config is required, e.g. outboxrelay verify --config connector.json")}
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cfg, err := loadConfig(*path, *brokers, log)
	if err != nil {
		return err
	}
	rcfg, _, err := router.ParseConfig(cfg.Router)
	if err != nil {
		return usageError{errors.New(cfg.Scrub(err.Error()))}
	}
	rt, err := router.New(rcfg, nil)
	if err != nil {
		return usageError{errors.New(cfg.Scrub(err.Error()))}
	}
	pcfg, err := replication.ParseConfig(cfg.Postgres)
	if err != nil {
		return usageError{errors.New(cfg.Scrub(err.Error()))}
	}
	scfg, err := sink.ParseConfig(cfg.Kafka)
	if err != nil {
		return usageError{errors.New(cfg.Scrub(err.Error()))}
	}
	dialer, err := scfg.Dialer()
	if err != nil {
		return usageError{errors.New(cfg.Scrub(err.Error()))}
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()

	conn, err := pcfg.Connect(ctx)
	if err != nil {
		return errors.New(cfg.Scrub("verify: " + err.Error()))
	}
	defer conn.Close(context.Background())
	tables, err := replication.IncludedTables(ctx, conn, &pcfg)
	if err != nil {
		return err
	}
	var events []verify.Event
	topics := map[string]bool{}
	for _, table := range tables {
		schema, name, _ := strings.Cut(table, ".")
		qualified := replication.QuoteIdent(schema) + "." + replication.QuoteIdent(name)
		evs, err := verify.Outbox(ctx, conn, verify.OutboxQuery{
			Table: qualified, IDColumn: rcfg.EventIDField, KeyColumn: rcfg.EventKeyField, OrderBy: *orderBy, Where: *where,
		})
		if err != nil {
			return err
		}
		events = append(events, evs...)
		if err := routedTopics(ctx, conn, rt, qualified, rcfg.RouteByField, *where, topics); err != nil {
			return err
		}
	}
	var names []string
	for t := range topics {
		names = append(names, t)
	}
	deliveries, err := verify.Topics(ctx, dialer, scfg.Brokers[0], names, "id")
	if err != nil {
		return err
	}
	report := verify.Check(events, deliveries)
	fmt.Fprintf(stdout, "tables %s; topics %s\n%s\n", strings.Join(tables, ", "), strings.Join(names, ", "), report)
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
