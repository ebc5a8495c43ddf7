// Command outboxbench measures a transactional-outbox relay — outboxrelay,
// Debezium's PostgreSQL connector with the Outbox EventRouter, or any other
// — from the outside: it inserts outbox rows with SQL, reads the topics with
// the Kafka protocol, and prints one JSON summary on stdout (progress goes
// to stderr). It knows nothing of the relay's internals.
//
//	outboxbench backlog --events 1000000 --rows-per-tx 100 [--recvlogical-slot S] [--relay-cmd "…"] …
//	outboxbench steady  --rate 1000 --duration 60s [--relay-cmd "…"] …
//	outboxbench recvlogical --slot S --events N …   (pg_recvlogical alone: the raw decoding limit)
//
// Every event's payload is {"run", "seq", "a", "aseq", "ts"[, "pad"]}: the
// run id, the event's number, its aggregate's index (aggregate_id is
// "agg-<a>"), its sequence within that aggregate, and clock_timestamp() at
// INSERT in microseconds. From those the consumer counts duplicates,
// missing events and per-aggregate reordering, and the latency is
// consumer receipt minus ts (same host, so the same clock; ts is taken
// inside the inserting transaction, microseconds before its commit).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "outboxbench:", err)
		var ue usageError
		if errors.As(err, &ue) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

type usageError struct{ error }

const usage = `usage: outboxbench <mode> [flags]

modes:
  backlog      insert --events first, then let the relay drain them (start it with --relay-cmd,
               or have it running); optionally time pg_recvlogical on the same backlog first
  steady       insert --rate events/s for --duration while consuming; end-to-end latency
  recvlogical  insert --events and time pg_recvlogical alone draining them from a fresh slot

run "outboxbench <mode> -h" for the flags`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError{errors.New(usage)}
	}
	mode := args[0]
	switch mode {
	case "backlog", "steady", "recvlogical":
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, usage)
		return nil
	default:
		return usageError{fmt.Errorf("unknown mode %q\n%s", mode, usage)}
	}
	o, err := parseFlags(mode, args[1:], stderr)
	if err != nil {
		return usageError{err}
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: o.logLevel}))
	b := &bench{o: o, log: log}
	s, err := b.run(ctx)
	if s != nil {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if jerr := enc.Encode(s); jerr != nil {
			return errors.Join(err, fmt.Errorf("writing the summary: %w", jerr))
		}
	}
	return err
}

func parseFlags(mode string, args []string, stderr io.Writer) (*options, error) {
	fl := flag.NewFlagSet(mode, flag.ContinueOnError)
	fl.SetOutput(stderr)
	o := &options{mode: mode}
	o.register(fl)
	if err := fl.Parse(args); err != nil {
		return nil, err
	}
	if fl.NArg() > 0 {
		return nil, fmt.Errorf("%s: unexpected arguments %q", mode, fl.Args())
	}
	if err := o.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", mode, err)
	}
	return o, nil
}
