package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxrelay/outboxrelay/outbox"
)

// env is what every command reads: the connector JSON's names and the
// database.
type env struct {
	opts    outbox.Options
	schema  string // the outbox table's schema: every table of the example lives there
	topic   string // where the relay sends order.placed
	brokers []string
	pool    *pgxpool.Pool
}

// parseFlags parses the command's flags (adding --config) and opens the
// database.
func parseFlags(ctx context.Context, fl *flag.FlagSet, args []string) (*env, error) {
	config := fl.String("config", "connector.json", "the connector JSON outboxrelay runs with")
	if err := fl.Parse(args); err != nil {
		return nil, err
	}
	opts, err := outbox.LoadOptions(*config)
	if err != nil {
		return nil, err
	}
	topic, err := opts.Topic(orderType)
	if err != nil {
		return nil, err
	}
	url := os.Getenv("DATABASE_URL")
	if url == "" {
		return nil, errors.New("DATABASE_URL is not set; e.g. postgres://postgres@127.0.0.1:5432/order_db")
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("connecting to DATABASE_URL: %w", err)
	}
	e := &env{opts: opts, topic: topic, pool: pool}
	e.schema, _, _ = strings.Cut(opts.Table, ".")
	if b := os.Getenv("KAFKA_BROKERS"); b != "" {
		e.brokers = strings.Split(b, ",")
	}
	return e, nil
}

// table qualifies one of the example's tables with the schema.
func (e *env) table(name string) string { return `"` + e.schema + `".` + name }
