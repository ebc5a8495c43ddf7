package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/outboxrelay/outboxrelay/internal/setup"
	"github.com/outboxrelay/outboxrelay/internal/textlist"
	"github.com/outboxrelay/outboxrelay/internal/verify"
)

// runVerify reads the outbox table(s) and every topic their rows route to,
// and reports by event id what is missing, what is duplicated and which
// aggregates saw first deliveries out of commit order. Exit 1 when anything
// is missing or out of order; duplicates alone are at-least-once delivery.
func runVerify(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	flags := newCommandFlags("verify", stderr)
	fl := flags.fl
	orderBy := fl.String("order-by", "", "SQL expression increasing with commit order, cast to bigint (default: the rows' commit timestamps; needs track_commit_timestamp=on)")
	where := fl.String("where", "", "SQL condition selecting the rows to check, e.g. \"created_at > now() - interval '1 hour'\"")
	emitted := fl.String("emitted", "", "check the events listed in this file (one per line: event id, route value, key, tab-separated; the lines of one key in its commit order) instead of the outbox tables: the events of an outbox without a table (logical decoding messages)")
	timeout := fl.Duration("timeout", 10*time.Minute, "give up after this long")
	topics := fl.String("topics", "", "with --shadow: the live connector's topics to compare, comma-separated (default: the topics the outbox rows route to)")
	if err := flags.parse(args); err != nil {
		return err
	}
	stdout = flags.human(stdout)
	shadow := flags.prefix()
	if shadow != "" && (*orderBy != "" || *emitted != "") {
		return usageError{errors.New("verify --shadow compares the live connector's topics with the shadow run's by event id: --order-by and --emitted do not apply")}
	}
	if *topics != "" && *where != "" {
		return usageError{errors.New("verify --shadow: --where selects the outbox rows whose routes name the topics to compare; with --topics naming them it does not apply: leave one out")}
	}
	if shadow == "" && *topics != "" {
		return usageError{errors.New("verify: --topics names the topics of a shadow comparison: add --shadow, or leave it out (verify reads the topics the outbox rows route to)")}
	}
	log := flags.warnLog(stderr)
	cfg, err := flags.load(ctx, log)
	if err != nil {
		return err
	}
	set, err := setup.Parse(cfg, log)
	if err == nil {
		_, err = set.Kafka.Dialer() // TLS and SASL settings usable
	}
	if err != nil {
		return usageError{errors.New(cfg.Scrub(inFile(*flags.config, err).Error()))}
	}
	if shadow != "" {
		ctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		return verify.RunShadow(ctx, set, shadow, *where, textlist.Split(*topics), stdout)
	}
	opt := verify.Options{OrderBy: *orderBy, Where: *where}
	if *emitted != "" {
		f, err := os.Open(*emitted)
		if err != nil {
			return usageError{fmt.Errorf("verify: --emitted: %w", err)}
		}
		defer f.Close()
		opt.Emitted = f
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	return verify.Run(ctx, set, opt, stdout)
}
