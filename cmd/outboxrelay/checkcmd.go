package main

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/outboxrelay/outboxrelay/internal/check"
)

// runCheck is `outboxrelay check`: the flags of run, then internal/check
// with the configuration run would use.
func runCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	flags := newCommandFlags("check", stderr)
	timeout := flags.fl.Duration("timeout", time.Minute, "give up on the checks after this long")
	if err := flags.parse(args); err != nil {
		return err
	}
	log := flags.warnLog(stderr)
	cfg, err := flags.load(ctx, log)
	if err != nil {
		return err
	}
	set, producer, err := build(cfg, flags.prefix(), log)
	if err != nil {
		return usageError{errors.New(cfg.Scrub(inFile(*flags.config, err).Error()))}
	}
	defer producer.Close()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	return check.Run(ctx, set, producer, flags.human(stdout), log)
}
