package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxrelay/outboxrelay/consumer"
)

// loyalty runs the loyalty-points consumer until SIGINT/SIGTERM, or until
// --idle-exit passed without a message once it has handled one.
func loyalty(ctx context.Context, args []string) error {
	fl := flag.NewFlagSet("loyalty", flag.ContinueOnError)
	idleExit := fl.Duration("idle-exit", 0, "stop after this long without a message, once one was handled (0: run until stopped)")
	e, err := parseFlags(ctx, fl, args)
	if err != nil {
		return err
	}
	defer e.pool.Close()
	if len(e.brokers) == 0 {
		return errors.New("KAFKA_BROKERS is not set; e.g. 127.0.0.1:9092")
	}
	crashAfter, _ := strconv.Atoi(os.Getenv("LOYALTY_CRASH_AFTER"))
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	idle := newIdleTimer(*idleExit, stop)

	tp, stopTracing, err := startTracing(ctx, "orders-loyalty")
	if err != nil {
		return err
	}
	defer stopTracing()

	applied := 0
	cfg := consumer.Config{
		Name:           groupName,
		Brokers:        e.brokers,
		Topics:         []string{e.topic},
		IDHeader:       "event_id", // the article's header; "id" carries the same value
		ProcessedTable: e.schema + ".processed_events",
		Logger:         slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		AfterCommit: func(m consumer.Message, ok bool) {
			idle.touch()
			if ok {
				applied++
			}
			if ok && applied == crashAfter {
				// The side effect is committed, the offset is not.
				fmt.Fprintf(os.Stderr, "loyalty: LOYALTY_CRASH_AFTER=%d: SIGKILL after committing event %s, before its offset commit\n", crashAfter, m.EventID)
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
		},
	}
	if tp != nil {
		cfg.TracerProvider = tp
	}
	c, err := consumer.New(cfg, e.pool, func(ctx context.Context, tx pgx.Tx, m consumer.Message) error {
		var o OrderPlaced
		if err := json.Unmarshal(m.Value, &o); err != nil {
			return fmt.Errorf("decoding the order event: %w", err)
		}
		_, err := tx.Exec(ctx, `INSERT INTO `+e.table("loyalty_points")+` (customer_id, points) VALUES ($1, $2)
			ON CONFLICT (customer_id) DO UPDATE SET points = loyalty_points.points + EXCLUDED.points`,
			o.CustomerID, o.TotalCents/100)
		return err
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "loyalty: consuming %s as group %s\n", e.topic, groupName)
	err = c.Run(ctx)
	s := c.Stats()
	fmt.Printf("loyalty: points applied for %d events, %d duplicates skipped\n", s.Applied, s.Duplicates)
	return err
}

// idleTimer calls stop once d passed since the last touch (the first
// touch arms it).
type idleTimer struct {
	mu sync.Mutex
	t  *time.Timer
	d  time.Duration
	f  func()
}

func newIdleTimer(d time.Duration, f func()) *idleTimer { return &idleTimer{d: d, f: f} }

func (i *idleTimer) touch() {
	if i.d <= 0 {
		return
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.t == nil {
		i.t = time.AfterFunc(i.d, i.f)
		return
	}
	i.t.Reset(i.d)
}
