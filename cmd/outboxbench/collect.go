package main

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"
)

// collector is the consumer plus the one goroutine that owns the Tracker.
// Others see progress through the atomics and read the Tracker only after
// stop returned.
type collector struct {
	tr      *Tracker
	unique  atomic.Int64
	dups    atomic.Int64
	allIn   chan struct{} // closed when every expected event arrived
	cancel  context.CancelFunc
	done    chan error // the consumer's error, after the accountant finished
	stopped bool
	err     error
}

func (b *bench) startCollector(ctx context.Context, tr *Tracker) (*collector, error) {
	brokers := strings.Split(b.o.brokers, ",")
	from, err := endOffsets(ctx, brokers, b.o.topics)
	if err != nil {
		return nil, fmt.Errorf("capturing the topics' end offsets: %w", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	out := make(chan Receipt, 8192)
	c := &collector{tr: tr, allIn: make(chan struct{}), cancel: cancel, done: make(chan error, 1)}
	cons := &consumer{brokers: brokers, from: from, run: b.o.workload.Run, out: out, log: b.log, readCommitted: b.o.readCommitted}
	consErr := make(chan error, 1)
	go func() {
		consErr <- cons.consume(cctx, b.o.topics)
		close(out)
	}()
	go func() {
		signaled := false
		for rc := range out {
			tr.Add(rc)
			c.unique.Store(tr.Unique)
			c.dups.Store(tr.Duplicates)
			if !signaled && tr.Done() {
				signaled = true
				close(c.allIn)
			}
		}
		c.done <- <-consErr
	}()
	return c, nil
}

// stop ends the consumer, waits for the accountant, and returns the
// consumer's error. After it, c.tr may be read.
func (c *collector) stop() error {
	if !c.stopped {
		c.stopped = true
		c.cancel()
		c.err = <-c.done
	}
	return c.err
}

// progress is a one-line view for stderr.
func (c *collector) progress(t0 time.Time) []any {
	el := time.Since(t0).Seconds()
	u := c.unique.Load()
	return []any{"received", u, "duplicates", c.dups.Load(), "seconds", round1(el), "eps", round1(float64(u) / el)}
}
