// Command outboxrelay streams transactional-outbox rows from PostgreSQL's
// logical replication to Kafka, routing them exactly as Debezium's Outbox
// EventRouter does, from the same connector JSON.
//
//	outboxrelay run --config connector.json [--kafka-brokers host:port]
//	outboxrelay sql
//	outboxrelay version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/outboxrelay/outboxrelay/internal/config"
	"github.com/outboxrelay/outboxrelay/replication"
	"github.com/outboxrelay/outboxrelay/router"
	"github.com/outboxrelay/outboxrelay/sink"
	ddl "github.com/outboxrelay/outboxrelay/sql"
)

// Exit codes: 0 orderly stop, 1 the relay stopped on an error (a poison
// row, a lost permission), 2 bad usage or configuration.
const (
	exitError  = 1
	exitConfig = 2
)

type usageError struct{ error }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "outboxrelay:", err)
		var ue usageError
		if errors.As(err, &ue) {
			os.Exit(exitConfig)
		}
		os.Exit(exitError)
	}
}

const usage = `usage: outboxrelay <command> [flags]

commands:
  run      stream the outbox to Kafka:  outboxrelay run --config connector.json
  sql      print the DDL to prepare a database (outbox table, publication, role)
  version  print the version`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError{errors.New(usage)}
	}
	switch args[0] {
	case "run":
		return runRelay(ctx, args[1:], stderr)
	case "sql":
		return printSQL(stdout)
	case "version":
		fmt.Fprintln(stdout, "outboxrelay", version())
		return nil
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, usage)
		return nil
	}
	return usageError{fmt.Errorf("unknown command %q\n%s", args[0], usage)}
}

func runRelay(ctx context.Context, args []string, stderr io.Writer) error {
	fl := flag.NewFlagSet("run", flag.ContinueOnError)
	fl.SetOutput(stderr)
	path := fl.String("config", "", "connector JSON file (Kafka Connect's {\"name\",\"config\"} or the bare config map)")
	brokers := fl.String("kafka-brokers", "", "Kafka bootstrap servers, host:port[,host:port]; else bootstrap.servers in the file, else $KAFKA_BOOTSTRAP_SERVERS")
	logFormat := fl.String("log-format", "json", "log format: json or text")
	logLevel := fl.String("log-level", "info", "log level: debug, info, warn or error")
	if err := fl.Parse(args); err != nil {
		return usageError{err}
	}
	if *path == "" {
		return usageError{errors.New("run: --config is required, e.g. outboxrelay run --config connector.json")}
	}
	log, err := newLogger(stderr, *logFormat, *logLevel)
	if err != nil {
		return usageError{err}
	}

	cfg, err := config.Load(*path, os.LookupEnv)
	if err != nil {
		return usageError{fmt.Errorf("loading %s: %w", *path, err)}
	}
	// Every error below may quote values; none may show a secret.
	scrub := func(err error) error {
		if err == nil {
			return nil
		}
		return errors.New(cfg.Scrub(err.Error()))
	}
	for _, w := range cfg.Warnings {
		log.Warn("config: " + cfg.Scrub(w))
	}
	if err := cfg.SetDefaultBrokers(*brokers, os.LookupEnv); err != nil {
		return usageError{scrub(err)}
	}
	relay, producer, err := wire(cfg, log)
	if err != nil {
		return usageError{scrub(err)}
	}
	defer producer.Close()
	log.Info("starting", "connector", cfg.Name, "version", version())
	err = replication.Run(ctx, relay)
	if err != nil {
		log.Error("stopped", "err", scrub(err).Error())
		return scrub(err)
	}
	log.Info("stopped")
	return nil
}

// wire builds the components from the config, validating all of them
// before anything connects.
func wire(cfg *config.Config, log *slog.Logger) (replication.Options, *sink.Producer, error) {
	var errs []error
	rcfg, warnings, err := router.ParseConfig(cfg.Router)
	errs = append(errs, err)
	for _, w := range warnings {
		log.Warn("config: " + w)
	}
	pcfg, err := replication.ParseConfig(cfg.Postgres)
	errs = append(errs, err)
	scfg, err := sink.ParseConfig(cfg.Kafka)
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return replication.Options{}, nil, err
	}
	rt, err := router.New(rcfg, log)
	if err != nil {
		return replication.Options{}, nil, err
	}
	producer, err := sink.NewProducer(scfg, log)
	if err != nil {
		return replication.Options{}, nil, err
	}
	poison, err := poisonPolicy(cfg.Relay, cfg.Name, producer, scfg.DeadLetterTopic, log)
	if err != nil {
		return replication.Options{}, nil, err
	}
	return replication.Options{
		Config: &pcfg,
		Router: rt,
		Sink:   &producerSink{p: producer},
		Log:    log,
		Poison: poison,
	}, producer, nil
}

// producerSink adapts the Kafka producer to the stream. The stream
// goroutine is its only caller, so one header buffer is reused; the
// producer copies the record before Send returns.
type producerSink struct {
	p       *sink.Producer
	headers []sink.Header
}

func (s *producerSink) Send(ctx context.Context, r *router.Record, ack func(error)) error {
	s.headers = s.headers[:0]
	for _, h := range r.Headers {
		s.headers = append(s.headers, sink.Header{Key: h.Key, Value: h.Value})
	}
	err := s.p.Send(ctx, sink.Record{
		Topic:     r.Topic,
		Partition: r.Partition,
		Key:       r.Key,
		Value:     r.Value,
		Headers:   s.headers,
		Timestamp: r.Timestamp,
		EventID:   r.EventID,
	}, ack)
	if errors.Is(err, sink.ErrRecordTooLarge) {
		// The record, not the connection, is at fault: a poison row.
		return fmt.Errorf("%w: %w", replication.ErrRecordRejected, err)
	}
	return err
}

func (s *producerSink) Flush(ctx context.Context) error { return s.p.Flush(ctx) }

func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: use debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch strings.ToLower(format) {
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: use json or text", format)
}

func printSQL(w io.Writer) error {
	for _, name := range []string{"outbox.sql", "role.sql", "publication.sql"} {
		b, err := fs.ReadFile(ddl.Files, name)
		if err != nil {
			return fmt.Errorf("sql: %w", err)
		}
		fmt.Fprintf(w, "-- %s\n%s\n", name, b)
	}
	return nil
}
