package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"
	"time"

	"github.com/outboxrelay/outboxrelay/internal/check"
)

// runCheck is `outboxrelay check`: the flags of run, then internal/check
// with the configuration run would use.
func runCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fl := flag.NewFlagSet("check", flag.ContinueOnError)
	fl.SetOutput(stderr)
	path := fl.String("config", "", "connector JSON file, as for run")
	brokers := fl.String("kafka-brokers", "", "Kafka bootstrap servers, as for run")
	timeout := fl.Duration("timeout", time.Minute, "give up on the checks after this long")
	shadow := shadowFlags(fl)
	if err := fl.Parse(args); err != nil {
		return usageError{err}
	}
	if *path == "" {
		return usageError{errors.New("check: --config is required, e.g. outboxrelay check --config connector.json")}
	}
	// Config warnings go to stderr as text; the checks themselves to stdout.
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cfg, err := loadConfig(*path, *brokers, log)
	if err != nil {
		return err
	}
	set, producer, err := build(cfg, shadow.prefix(), log)
	if err != nil {
		return usageError{errors.New(cfg.Scrub(err.Error()))}
	}
	defer producer.Close()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	return check.Run(ctx, set, producer, stdout, log)
}
