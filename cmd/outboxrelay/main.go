// Command outboxrelay streams transactional-outbox rows from PostgreSQL's
// logical replication to Kafka, routing them exactly as Debezium's Outbox
// EventRouter does, from the same connector JSON.
//
//	outboxrelay run --config connector.json [--kafka-brokers host:port] [--http-addr :8080]
//	outboxrelay check --config connector.json [--kafka-brokers host:port]
//	outboxrelay sql [--pg-version 18]
//	outboxrelay version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/outboxrelay/outboxrelay/internal/config"
	"github.com/outboxrelay/outboxrelay/replication"
	"github.com/outboxrelay/outboxrelay/router"
	"github.com/outboxrelay/outboxrelay/sink"
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
	// A CPU profile of the whole run, for performance work: set
	// OUTBOXRELAY_CPUPROFILE=/path/cpu.pprof, read it with go tool pprof.
	if path := os.Getenv("OUTBOXRELAY_CPUPROFILE"); path != "" {
		if f, err := os.Create(path); err == nil {
			if pprof.StartCPUProfile(f) == nil {
				defer f.Close()
				defer pprof.StopCPUProfile()
			}
		}
	}
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
  run      stream the outbox to Kafka:  outboxrelay run --config connector.json [--http-addr :8080]
  check    check PostgreSQL and Kafka before streaming; exit 1 on any failed check
  verify   compare the outbox table with the topics: missing, duplicated, out-of-order events
  sql      print the DDL to prepare a database (outbox table, publication, role, clean-up)
  version  print the version`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError{errors.New(usage)}
	}
	switch args[0] {
	case "run":
		return runRelay(ctx, args[1:], stderr)
	case "verify":
		return runVerify(ctx, args[1:], stdout, stderr)
	case "check":
		return runCheck(ctx, args[1:], stdout, stderr)
	case "sql":
		return printSQL(args[1:], stdout, stderr)
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
	httpAddr := fl.String("http-addr", "", "serve /metrics, /healthz and /readyz on this address, e.g. :8080; empty (the default): no HTTP server")
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

	cfg, err := loadConfig(*path, *brokers, log)
	if err != nil {
		return err
	}
	// Every error below may quote values; none may show a secret.
	scrub := func(err error) error {
		if err == nil {
			return nil
		}
		return errors.New(cfg.Scrub(err.Error()))
	}
	relay, producer, err := wire(cfg, log)
	if err != nil {
		return usageError{scrub(err)}
	}
	defer producer.Close()
	jcfg, err := parseJanitorConfig(cfg.Relay)
	if err != nil {
		return usageError{err}
	}

	m := newMetrics(producer.InFlight)
	relay.Observer = m
	producer.SetObserver(m)
	if poison := relay.Poison; poison != nil {
		relay.Poison = func(ctx context.Context, ev *router.Event, rec *router.Record, cause error, ack func(error)) error {
			err := poison(ctx, ev, rec, cause, ack)
			if err == nil {
				m.deadLettered.Inc()
			}
			return err
		}
	}
	// The helpers below stop with bg, after Run has flushed and confirmed.
	bg, stopBG := context.WithCancel(context.Background())
	var waits []func()
	defer func() {
		stopBG()
		for _, w := range waits {
			w()
		}
	}()
	if *httpAddr != "" {
		_, wait, err := serveHTTP(bg, *httpAddr, m, log)
		if err != nil {
			return usageError{err}
		}
		waits = append(waits, wait)
	}
	waits = append(waits, goWait(func() { pingKafka(bg, producer.Ping, m, 5*time.Second) }))
	waits = append(waits, goWait(func() { logProgress(bg, m, log, 30*time.Second) }))
	if jcfg.Retention > 0 {
		j := &janitor{cfg: jcfg, pg: relay.Config, log: log.With("component", "janitor"), m: m,
			active: func() bool { return m.currentState() == replication.StateStreaming }}
		waits = append(waits, goWait(func() { j.run(bg) }))
	}

	log.Info("starting", "connector", cfg.Name, "version", version())
	err = replication.Run(ctx, relay)
	if err != nil {
		log.Error("stopped", "err", scrub(err).Error())
		return scrub(err)
	}
	log.Info("stopped")
	return nil
}

// loadConfig reads the connector file, logs its warnings (scrubbed of
// secrets) and settles the Kafka bootstrap servers (flag, file, then
// $KAFKA_BOOTSTRAP_SERVERS). Its errors are usage errors (exit code 2).
func loadConfig(path, brokers string, log *slog.Logger) (*config.Config, error) {
	cfg, err := config.Load(path, os.LookupEnv)
	if err != nil {
		return nil, usageError{fmt.Errorf("loading %w", err)} // config errors start with the path
	}
	for _, w := range cfg.Warnings {
		log.Warn("config: " + cfg.Scrub(w))
	}
	if err := cfg.SetDefaultBrokers(brokers, os.LookupEnv); err != nil {
		return nil, usageError{errors.New(cfg.Scrub(err.Error()))}
	}
	return cfg, nil
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
	if err == nil {
		_, err = pcfg.ConnConfig() // TLS files readable, values valid
		errs = append(errs, err)
	}
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
		// The stream stops reading at buffer.memory, answering the
		// server while it waits; the producer then never blocks Send.
		MaxInFlightBytes: scfg.BufferMemory,
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

// goWait runs f in a goroutine and returns a function that waits for it.
func goWait(f func()) func() {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	return func() { <-done }
}
