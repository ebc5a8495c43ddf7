// Command outboxrelay streams transactional-outbox rows from PostgreSQL
// (logical replication, or polling with outbox.capture.mode=poll) to Kafka,
// routing them exactly as Debezium's Outbox EventRouter does, from the same
// connector JSON.
//
//	outboxrelay run --config connector.json [--kafka-brokers host:port] [--http-addr :8080] [--shadow]
//	outboxrelay check --config connector.json [--kafka-brokers host:port] [--shadow]
//	outboxrelay verify --config connector.json [--where …] [--order-by …] [--emitted FILE] [--shadow]
//	outboxrelay sql [--pg-version 18] [--mode poll]
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
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"go.opentelemetry.io/otel"

	"github.com/outboxrelay/outboxrelay/capture"
	"github.com/outboxrelay/outboxrelay/internal/config"
	"github.com/outboxrelay/outboxrelay/internal/setup"
	"github.com/outboxrelay/outboxrelay/internal/tracing"
	"github.com/outboxrelay/outboxrelay/poll"
	"github.com/outboxrelay/outboxrelay/postgres"
	"github.com/outboxrelay/outboxrelay/relay"
	"github.com/outboxrelay/outboxrelay/replication"
	"github.com/outboxrelay/outboxrelay/sink"
)

// Exit codes: 0 orderly stop, 1 the relay stopped on an error (a poison
// row, a lost permission), 2 bad usage or configuration.
const (
	exitError  = 1
	exitConfig = 2
)

// usageError is bad usage or configuration (exit code 2); one wrapping
// flag.ErrHelp is -h or --help, after its usage was printed (exit 0).
type usageError struct{ error }

func (u usageError) Unwrap() error { return u.error }

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
	// A heap profile of the largest live heap (memprofile.go): set
	// OUTBOXRELAY_MEMPROFILE=/path/heap.pprof.
	if path := os.Getenv("OUTBOXRELAY_MEMPROFILE"); path != "" {
		defer startMemProfile(path)()
	}
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if code := exitCode(err, os.Stderr); code != 0 {
		os.Exit(code)
	}
}

// exitCode is the exit code of the command's err, which it prints to
// stderr on its final line. The error may quote a server's text: it is
// printable, so that it cannot drive the terminal.
func exitCode(err error, stderr io.Writer) int {
	if err == nil || errors.Is(err, flag.ErrHelp) { // -h: the usage is printed
		return 0
	}
	fmt.Fprintln(stderr, "outboxrelay:", printable(err.Error()))
	var ue usageError
	if errors.As(err, &ue) {
		return exitConfig
	}
	return exitError
}

const usage = `usage: outboxrelay <command> [flags]

commands:
  run      stream the outbox to Kafka:  outboxrelay run --config connector.json [--http-addr :8080] [--shadow]
  check    check PostgreSQL and Kafka before streaming; exit 1 on any failed check
  verify   compare the outbox table with the topics: missing, duplicated, out-of-order events;
           with --shadow, the live connector's topics with a shadow run's, record by record
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
	flags := newCommandFlags("run", stderr)
	fl := flags.fl
	logFormat := fl.String("log-format", "json", "log format: json or text")
	logLevel := fl.String("log-level", "info", "log level: debug, info, warn or error")
	httpAddr := fl.String("http-addr", "", "serve /metrics, /healthz and /readyz on this address, e.g. :8080; empty (the default): no HTTP server")
	if err := flags.parse(args); err != nil {
		return err
	}
	log, err := newLogger(stderr, *logFormat, *logLevel, flags.red)
	if err != nil {
		return usageError{err}
	}

	cfg, err := flags.load(ctx, log)
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
	set, producer, err := build(cfg, flags.prefix(), log)
	if err != nil {
		return usageError{scrub(inFile(*flags.config, err))}
	}
	defer producer.Close()
	postgres.WarnWeaknesses(log, &set.Postgres.Config)
	sink.WarnWeaknesses(log, &set.Kafka)
	st := newStatus()
	m := newMetrics(st, producer.InFlight)
	producer.SetObserver(m)
	memoryLimit(set.Kafka.BufferMemory, log)
	opt, err := wire(set, producer, m, log)
	if err != nil {
		return usageError{scrub(inFile(*flags.config, err))}
	}

	// The helpers below stop with bg, after relay.Run has flushed and confirmed.
	bg, stopBG := context.WithCancel(context.Background())
	var waits []func()
	defer func() {
		stopBG()
		for _, w := range waits {
			w()
		}
	}()
	if *httpAddr != "" {
		_, wait, err := serveHTTP(bg, *httpAddr, m, st, log)
		if err != nil {
			return usageError{err}
		}
		waits = append(waits, wait)
	}
	waits = append(waits, goWait(func() { pingKafka(bg, producer.Ping, st, 5*time.Second) }))
	waits = append(waits, goWait(func() { logProgress(bg, m, st, log, 30*time.Second) }))
	if j := janitor(set, st, m, log); j != nil {
		waits = append(waits, goWait(func() { j.Run(bg) }))
	}

	tp, err := startTracing(ctx, set, &opt, log)
	if err != nil {
		return usageError{err}
	}
	defer closeThenShutdown(producer, tp, log)

	log.Info("starting", "connector", cfg.Name, "version", version())
	err = relay.Run(ctx, opt)
	if err != nil {
		log.Error("stopped", "err", scrub(err).Error())
		return scrub(err)
	}
	log.Info("stopped")
	return nil
}

// closeThenShutdown closes the producer, which ends the spans of records
// still in flight (a stop whose flush timed out acks them with ErrClosed),
// then shuts the tracer provider down: before the Close, the provider
// would drop those failed publishes' spans.
func closeThenShutdown(producer *sink.Producer, tp *tracing.Provider, log *slog.Logger) {
	producer.Close()
	tracing.Shutdown(tp, 5*time.Second, log)
}

// startTracing builds the tracer provider the OTEL_* environment asks for
// (internal/tracing) and gives the relay its tracer, with the EventRouter's
// tracing options; nil when tracing is off.
func startTracing(ctx context.Context, set *setup.Setup, opt *relay.Options, log *slog.Logger) (*tracing.Provider, error) {
	ts, err := tracing.Read(os.Getenv)
	if err != nil {
		return nil, err
	}
	if ts.Exporter != "" {
		otel.SetErrorHandler(tracing.ErrorHandler{Log: log}) // before New: the SDK reports its errors only there
	}
	tp, err := tracing.New(ctx, ts, tracing.DefaultServiceName, version())
	if tp == nil || err != nil {
		if err == nil {
			log.Debug("tracing off", "why", ts.Off)
		}
		return nil, err
	}
	rc := set.Router.Config()
	opt.Tracing = relay.Tracing{Tracer: tp.Tracer("github.com/outboxrelay/outboxrelay/relay"),
		Operation: rc.TracingOperationName, WithoutContext: rc.TraceEventsWithoutContext}
	log.Info("tracing on: spans exported over OTLP", "protocol", ts.Exporter, "operation", rc.TracingOperationName,
		"with.context.field.only", !rc.TraceEventsWithoutContext)
	return tp, nil
}

// janitor is the clean-up janitor of the capture mode, nil when
// outbox.retention.ms is off.
func janitor(set *setup.Setup, st *status, m *metrics, log *slog.Logger) *postgres.Janitor {
	if set.Janitor.Retention <= 0 {
		return nil
	}
	rule := replication.JanitorRule(&set.Postgres, set.Janitor)
	if set.Poll.Poll() {
		rule = poll.JanitorRule(set.Poll)
	}
	return &postgres.Janitor{Cfg: set.Janitor, PG: &set.Postgres.Config, Rule: rule, Log: log.With("component", "janitor"),
		Active:  func() bool { return st.State() == capture.StateStreaming },
		Deleted: func(n int64) { m.janitorDeleted.Add(float64(n)) }}
}

// loadConfig reads the connector file, gives its secrets to red, logs its
// warnings (the first config.MaxWarnings, then how many more) and settles
// the Kafka bootstrap servers (flag, file, then $KAFKA_BOOTSTRAP_SERVERS).
// Its errors are usage errors (exit code 2). It returns when ctx ends
// (SIGTERM) even if reading were to block: config.Load refuses FIFOs and
// devices before opening them, and this is the second guard.
func loadConfig(ctx context.Context, path, brokers string, log *slog.Logger, red *config.Redactor) (*config.Config, error) {
	cfg, err := loadCtx(ctx, func() (*config.Config, error) { return config.Load(path, os.LookupEnv) })
	if err != nil {
		return nil, usageError{fmt.Errorf("loading %w", err)} // config errors start with the path
	}
	red.Set(cfg)
	for _, w := range cfg.Warnings {
		log.Warn("config: " + w)
	}
	if cfg.MoreWarnings > 0 {
		log.Warn(fmt.Sprintf("config: %d more warnings not shown (%d in all); fix the ones above and run again to see the rest", cfg.MoreWarnings, cfg.MoreWarnings+len(cfg.Warnings)))
	}
	if err := cfg.SetDefaultBrokers(brokers, os.LookupEnv); err != nil {
		return nil, usageError{errors.New(cfg.Scrub(err.Error()))}
	}
	return cfg, nil
}

// loadCtx runs load and returns its result, or ctx's error as soon as ctx
// ends; a load still running is left behind, the process exits.
func loadCtx(ctx context.Context, load func() (*config.Config, error)) (*config.Config, error) {
	type result struct {
		cfg *config.Config
		err error
	}
	done := make(chan result, 1)
	go func() {
		cfg, err := load()
		done <- result{cfg, err}
	}()
	select {
	case r := <-done:
		return r.cfg, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("the connector file: stopped while reading it: %w", context.Cause(ctx))
	}
}

// inFile is an error of the configuration read from path, naming the
// file first as the errors of config.Load do.
func inFile(path string, err error) error {
	if strings.HasPrefix(err.Error(), path+":") {
		return err
	}
	return fmt.Errorf("%s: %w", path, err)
}

// build parses every component's configuration, makes it a shadow run's
// when shadow names a topic prefix (setup.Shadow), and builds the
// producer; nothing connects yet.
func build(cfg *config.Config, shadow string, log *slog.Logger) (*setup.Setup, *sink.Producer, error) {
	set, err := setup.Parse(cfg, log)
	if err != nil {
		return nil, nil, err
	}
	if shadow != "" {
		changes, err := set.Shadow(shadow, log)
		if err != nil {
			return nil, nil, err
		}
		log.Info("shadow run: a slot, an offsets topic and topics of its own beside the live connector; nothing of the connector's is written", "changed", changes)
	}
	producer, err := set.Producer(log)
	if err != nil {
		return nil, nil, err
	}
	return set, producer, nil
}

// wire connects the data path: the capture source (logical replication, or
// polling under outbox.capture.mode=poll), the router, the delivery
// (at-least-once through the producer, or exactly-once: set.Delivery), the
// poison policy and the metrics.
func wire(set *setup.Setup, producer *sink.Producer, m *metrics, log *slog.Logger) (relay.Options, error) {
	poison, err := set.Poison(producer, log)
	if err != nil {
		return relay.Options{}, err
	}
	var src capture.Source
	if set.Poll.Poll() {
		src, err = poll.NewSource(&set.Postgres.Config, set.Poll, poll.SourceOptions{Log: log, Observer: m, Stuck: func(n int64) { m.pollStuck.Set(float64(n)) }})
	} else {
		src, err = replication.NewSource(&set.Postgres, replication.SourceOptions{Log: log, Observer: m})
	}
	if err != nil {
		return relay.Options{}, err
	}
	out, err := set.Delivery(producer, log)
	if err != nil {
		return relay.Options{}, err
	}
	convert, err := set.Converter()
	if err != nil {
		return relay.Options{}, err
	}
	if set.ExactlyOnceRequired {
		log.Info("exactly-once: Kafka transactions", "transactional.id", set.ExactlyOnce.TransactionalID, "transaction.boundary", set.ExactlyOnce.Boundary)
	}
	return relay.Options{
		Source:         src,
		Router:         set.Router,
		Delivery:       out,
		Log:            log,
		Observer:       m,
		Poison:         poison,
		Convert:        convert,
		HeartbeatTopic: set.Postgres.HeartbeatTopic,
		// The stream stops reading at buffer.memory, answering the
		// server while it waits; the producer then never blocks Send.
		MaxInFlightBytes: set.Kafka.BufferMemory,
		MaxRetries:       set.Postgres.MaxRetries,
		RetryWait:        set.Postgres.RetryWait,
		RecordEvery:      set.Offsets.Every,
	}, nil
}

// newLogger is run's logger: JSON or text lines on w, redacted by red.
func newLogger(w io.Writer, format, level string, red *config.Redactor) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: use debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch strings.ToLower(format) {
	case "json":
		return slog.New(red.Handler(slog.NewJSONHandler(w, opts))), nil
	case "text":
		return slog.New(red.Handler(slog.NewTextHandler(w, opts))), nil
	}
	return nil, fmt.Errorf("--log-format %q: use json or text", format)
}

// memoryLimit sets Go's soft memory limit to buffer.memory plus a fixed
// allowance, unless GOMEMLIMIT is set: the work in flight is bounded by
// buffer.memory, and the limit makes the collector run before the heap
// doubles it (with GOGC alone, a full buffer could take twice its size).
// Unless GOGC is set, it also sets the collector's target to 50 (Go's
// default is 100): a draining relay's live heap is mostly records in
// flight (7 to 10 MB at the in-flight budget), which GOGC=100 lets grow to
// twice that between collections. With 50 the heap peaks at 1.5 times it:
// draining 200,000 events at 100 rows per transaction exactly-once, peak
// RSS 35.2 and 35.9 MiB against 39.7 and 40.3 MiB, for 3 more points of
// CPU in the collector (9 and 11 % against 6 and 8 %; docs/performance.md, "What
// an event costs").
func memoryLimit(bufferMemory int64, log *slog.Logger) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
		log.Debug("garbage collector target", "gc_percent", gcPercent, "set", "GOGC to choose another")
	}
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	limit := bufferMemory + 16<<20
	debug.SetMemoryLimit(limit)
	log.Debug("memory limit", "bytes", limit, "set", "GOMEMLIMIT to choose another")
}

// gcPercent is the collector's target (GOGC) the relay sets unless GOGC is.
const gcPercent = 50

// goWait runs f in a goroutine and returns a function that waits for it.
func goWait(f func()) func() {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	return func() { <-done }
}
