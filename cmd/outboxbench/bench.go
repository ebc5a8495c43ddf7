package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxrelay/outboxrelay/capture"
)

// bench runs one mode.
type bench struct {
	o   *options
	log *slog.Logger
}

// Summary is the JSON printed on stdout. Times are seconds, rates events
// per second, latencies milliseconds.
type Summary struct {
	Mode       string   `json:"mode"`
	Run        string   `json:"run"`
	Relay      string   `json:"relay_cmd,omitempty"`
	Table      string   `json:"table"`
	Topics     []string `json:"topics,omitempty"`
	Events     int64    `json:"events"`
	RowsPerTx  int      `json:"rows_per_tx"`
	Aggregates int      `json:"aggregates"`
	Workers    int      `json:"workers"`

	InsertSeconds float64 `json:"insert_seconds"`
	InsertEPS     float64 `json:"insert_eps"`

	// Steady mode.
	Rate          float64 `json:"rate,omitempty"`
	AchievedRate  float64 `json:"achieved_rate,omitempty"`
	InsertLagMax  float64 `json:"insert_lag_max_ms,omitempty"` // worst commit behind schedule
	WarmupEvents  int64   `json:"warmup_events,omitempty"`
	LatencySource string  `json:"latency_source,omitempty"`

	DrainFrom               string  `json:"drain_from,omitempty"` // relay_start or first_insert
	DrainSeconds            float64 `json:"drain_seconds,omitempty"`
	ThroughputEPS           float64 `json:"throughput_eps,omitempty"`
	ThroughputAfterFirstEPS float64 `json:"throughput_after_first_event_eps,omitempty"`
	FirstEventSeconds       float64 `json:"first_event_seconds,omitempty"`
	// The relay's slot confirming the run's last COMMIT (target_lsn),
	// from t0; null when it did not within --confirm-timeout after the
	// last event arrived (confirm_timeout; confirmed_lsn is then where the
	// slot stood). No other figure waits for or depends on it.
	ConfirmSeconds *float64 `json:"confirm_seconds"`
	ConfirmTimeout bool     `json:"confirm_timeout,omitempty"`
	TargetLSN      string   `json:"target_lsn,omitempty"`
	ConfirmedLSN   string   `json:"confirmed_lsn,omitempty"`
	Latency        *Latency `json:"latency_ms,omitempty"`

	Received      int64   `json:"received"`
	Duplicates    int64   `json:"duplicates"`
	Missing       int64   `json:"missing"`
	MissingSample []int64 `json:"missing_sample,omitempty"`
	OutOfOrder    int64   `json:"out_of_order"`
	Foreign       int64   `json:"foreign"`
	Invalid       int64   `json:"invalid,omitempty"`

	PeakRSSMiB           float64 `json:"peak_rss_mib,omitempty"`
	CPUSeconds           float64 `json:"cpu_seconds,omitempty"`
	CPUSecondsPerMillion float64 `json:"cpu_seconds_per_million,omitempty"`
	RelayExitCode        *int    `json:"relay_exit_code,omitempty"`
	RelayStopSeconds     float64 `json:"relay_stop_seconds,omitempty"`
	RelayKilled          bool    `json:"relay_killed,omitempty"`
	RelayLog             string  `json:"relay_log,omitempty"`

	// Timeline: per second since the first event received, for charts.
	Timeline []Point `json:"timeline,omitempty"`

	Recvlogical        *Recvlogical `json:"recvlogical,omitempty"`
	RelayVsRecvlogical float64      `json:"relay_vs_recvlogical,omitempty"` // throughput_eps / recvlogical's
}

func (b *bench) run(ctx context.Context) (*Summary, error) {
	o := b.o
	s := &Summary{
		Mode: o.mode, Run: o.workload.Run, Relay: o.relayCmd, Table: o.table, Events: o.events,
		RowsPerTx: o.rowsPerTx, Aggregates: o.aggregates, Workers: o.workload.Workers,
	}
	if o.mode != "recvlogical" {
		s.Topics = o.topics
	}
	admin, err := pgx.Connect(ctx, o.pgURL)
	if err != nil {
		return nil, fmt.Errorf("connecting to PostgreSQL: %w", err)
	}
	defer admin.Close(context.Background())
	if o.create {
		stmts, err := setupSQL(o.table, o.publication, o.grantTo)
		if err != nil {
			return nil, err
		}
		if err := execAll(ctx, admin, stmts); err != nil {
			return nil, fmt.Errorf("--create: %w", err)
		}
	}
	if o.slot != "" {
		if o.freshSlot {
			if err := dropSlot(ctx, admin, o.slot); err != nil {
				return nil, err
			}
		}
		created, err := ensureSlot(ctx, admin, o.slot)
		if err != nil {
			return nil, err
		}
		if created {
			b.log.Info("created the relay's slot before inserting", "slot", o.slot)
		}
	}
	if o.recvSlot != "" {
		// A fresh slot: it must see exactly this backlog, nothing older.
		if err := dropSlot(ctx, admin, o.recvSlot); err != nil {
			return nil, err
		}
		if _, err := ensureSlot(ctx, admin, o.recvSlot); err != nil {
			return nil, err
		}
		if !o.keepRecvSlot {
			defer func() {
				if err := dropSlot(context.Background(), admin, o.recvSlot); err != nil {
					b.log.Warn("dropping the pg_recvlogical slot", "err", err)
				}
			}()
		}
	}
	switch o.mode {
	case "recvlogical":
		return s, b.recvlogicalOnly(ctx, s)
	case "backlog":
		return s, b.backlog(ctx, s, admin)
	default:
		return s, b.steady(ctx, s, admin)
	}
}

func (b *bench) recvlogicalOnly(ctx context.Context, s *Summary) error {
	in := &inserter{pgURL: b.o.pgURL, table: b.o.table, w: &b.o.workload}
	res, err := b.insertBacklog(ctx, in, s)
	if err != nil {
		return err
	}
	return b.recvlogical(ctx, s, res.LastLSN)
}

func (b *bench) insertBacklog(ctx context.Context, in *inserter, s *Summary) (InsertResult, error) {
	stop := b.every(ctx, func() { b.log.Info("inserting", "events", in.inserted.Load(), "of", b.o.events) })
	res, err := in.backlog(ctx, b.o.txPerTrip)
	stop()
	if err != nil {
		return res, err
	}
	d := res.End.Sub(res.Start).Seconds()
	s.InsertSeconds, s.InsertEPS = round3(d), round1(float64(b.o.events)/d)
	b.log.Info("inserted", "events", b.o.events, "seconds", s.InsertSeconds, "eps", s.InsertEPS, "lsn", res.LastLSN)
	return res, nil
}

func (b *bench) recvlogical(ctx context.Context, s *Summary, endpos capture.LSN) error {
	bin, err := findRecvlogical(b.o.recvBin)
	if err != nil {
		return err
	}
	b.log.Info("pg_recvlogical draining", "slot", b.o.recvSlot, "endpos", endpos)
	d, cpu, err := runRecvlogical(ctx, bin, withSSLMode(b.o.pgURL, b.o.recvSSLMode), b.o.recvSlot, b.o.publication, endpos)
	if err != nil {
		return err
	}
	s.Recvlogical = &Recvlogical{
		Slot: b.o.recvSlot, Seconds: round3(d.Seconds()),
		ThroughputEPS: round1(float64(b.o.events) / d.Seconds()), EndLSN: endpos.String(),
		CPUSeconds: round3(cpu.Seconds()), CPUSecondsPerMillion: round3(cpu.Seconds() / float64(b.o.events) * 1e6),
	}
	b.log.Info("pg_recvlogical done", "seconds", s.Recvlogical.Seconds, "eps", s.Recvlogical.ThroughputEPS, "cpu_seconds", s.Recvlogical.CPUSeconds)
	return nil
}

// recvlogicalBeside starts pg_recvlogical streaming from --recvlogical-slot
// beside the relay through a steady run; the returned stop records its CPU
// per event in s. Without the flag it does nothing.
func (b *bench) recvlogicalBeside(ctx context.Context, s *Summary) (stop func(), err error) {
	if b.o.recvSlot == "" {
		return func() {}, nil
	}
	bin, err := findRecvlogical(b.o.recvBin)
	if err != nil {
		return nil, err
	}
	r, err := startRecvlogical(ctx, bin, withSSLMode(b.o.pgURL, b.o.recvSSLMode), b.o.recvSlot, b.o.publication)
	if err != nil {
		return nil, err
	}
	return func() {
		d, cpu, err := r.stop()
		if err != nil {
			b.log.Warn("pg_recvlogical beside the relay", "err", err)
			return
		}
		s.Recvlogical = &Recvlogical{Slot: b.o.recvSlot, Seconds: round3(d.Seconds()), CPUSeconds: round3(cpu.Seconds()),
			CPUSecondsPerMillion: round3(cpu.Seconds() / float64(b.o.events) * 1e6)}
		b.log.Info("pg_recvlogical stopped", "seconds", s.Recvlogical.Seconds, "cpu_seconds", s.Recvlogical.CPUSeconds)
	}, nil
}

// backlog: consumer first (from the end offsets), insert everything, time
// pg_recvlogical, then start the relay (or, without --relay-cmd, measure the
// running relay from the first insert) and time the drain.
func (b *bench) backlog(ctx context.Context, s *Summary, admin *pgx.Conn) error {
	o := b.o
	tr := NewTracker(o.events, o.aggregates, 0)
	// Without --relay-cmd the relay runs already and drains while we
	// insert, so the consumer runs from the start.
	col, err := b.startCollector(ctx, tr)
	if err != nil {
		return err
	}
	defer col.stop()
	in := &inserter{pgURL: o.pgURL, table: o.table, w: &o.workload}
	var relay *child
	s.DrainFrom = "first_insert"
	res, err := b.insertBacklog(ctx, in, s)
	if err != nil {
		return err
	}
	if o.recvSlot != "" {
		if err := b.recvlogical(ctx, s, res.LastLSN); err != nil {
			return err
		}
	}
	t0 := res.Start
	if o.relayCmd != "" {
		s.DrainFrom = "relay_start"
		if relay, err = b.startRelay(s); err != nil {
			return err
		}
		t0 = relay.started
	}
	return b.finish(ctx, s, admin, col, relay, t0, res.LastLSN)
}

// steady: relay up and streaming, consumer running, then the paced insert.
func (b *bench) steady(ctx context.Context, s *Summary, admin *pgx.Conn) error {
	o := b.o
	s.Rate = o.rate
	s.WarmupEvents = warmupEvents(o.rate, o.warmup, o.events)
	s.LatencySource = "consumer receipt - payload ts (clock_timestamp() at INSERT, server clock)"
	tr := NewTracker(o.events, o.aggregates, s.WarmupEvents)
	var relay *child
	var err error
	if o.relayCmd != "" {
		if relay, err = b.startRelay(s); err != nil {
			return err
		}
		actx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		err = waitActive(actx, admin, o.slot)
		cancel()
		if o.slot == "" && err == nil {
			// No slot to watch (a relay in poll mode): give it a moment
			// to connect; latency counts from the INSERT anyway.
			time.Sleep(time.Second)
		}
		if err != nil {
			b.stopRelay(relay, s)
			return err
		}
		b.log.Info("relay streams", "slot", o.slot, "after_seconds", round3(time.Since(relay.started).Seconds()))
	}
	col, err := b.startCollector(ctx, tr)
	if err != nil {
		if relay != nil {
			b.stopRelay(relay, s)
		}
		return err
	}
	defer col.stop()
	stopRecv, err := b.recvlogicalBeside(ctx, s)
	if err != nil {
		if relay != nil {
			b.stopRelay(relay, s)
		}
		return err
	}
	defer stopRecv()
	in := &inserter{pgURL: o.pgURL, table: o.table, w: &o.workload}
	stop := b.every(ctx, func() {
		b.log.Info("steady", "inserted", in.inserted.Load(), "of", o.events, "received", col.unique.Load(), "duplicates", col.dups.Load())
	})
	var r struct {
		res InsertResult
		err error
	}
	r.res, r.err = in.steady(ctx, o.rate)
	stop()
	if r.err != nil {
		if relay != nil {
			b.stopRelay(relay, s)
		}
		return r.err
	}
	d := r.res.End.Sub(r.res.Start).Seconds()
	s.InsertSeconds, s.InsertEPS = round3(d), round1(float64(o.events)/d)
	s.AchievedRate = s.InsertEPS
	s.InsertLagMax = round3(float64(r.res.LagMax) / float64(time.Millisecond))
	t0 := r.res.Start
	s.DrainFrom = "first_insert"
	if relay != nil {
		t0 = relay.started
		s.DrainFrom = "relay_start"
	}
	err = b.finish(ctx, s, admin, col, relay, t0, r.res.LastLSN)
	s.ThroughputEPS, s.ThroughputAfterFirstEPS = 0, 0 // paced: the rate is the input
	s.DrainSeconds = 0
	lat := tr.Latency()
	s.Latency = &lat
	return err
}

// finish consumes until every event arrived (or --timeout), waits for the
// relay's slot to confirm target, stops the relay and fills the summary.
func (b *bench) finish(ctx context.Context, s *Summary, admin *pgx.Conn, col *collector, relay *child, t0 time.Time, target capture.LSN) error {
	o := b.o
	s.TargetLSN = target.String()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	poll, err := b.pollConfirmed(ctx, target)
	if err != nil {
		return err
	}
	defer poll.close()

	var errs []error
	if err := b.waitDelivered(ctx, col, relay, t0, target, &poll.seen); err != nil {
		errs = append(errs, err)
	}
	// Late duplicates.
	select {
	case <-time.After(o.quiet):
	case <-ctx.Done():
	}
	if o.slot != "" && len(errs) == 0 {
		if err := b.awaitConfirmed(s, poll, t0, target); err != nil {
			errs = append(errs, err)
		}
	}
	cancel()
	if relay != nil {
		b.stopRelay(relay, s)
	}
	if err := col.stop(); err != nil {
		errs = append(errs, err)
	}
	s.fill(col.tr, t0, o.events)
	return errors.Join(errs...)
}

// confirmPoller polls the relay's slot (--slot) from t0 on, concurrently,
// so that confirm_seconds is when the slot confirmed, not when the
// consumer finished.
type confirmPoller struct {
	done chan confirmed // the one result; never sent without --slot
	seen atomic.Uint64  // the slot's confirmed_flush_lsn last read
	conn *pgx.Conn
}

type confirmed struct {
	at  time.Time
	lsn capture.LSN
	err error
}

func (b *bench) pollConfirmed(ctx context.Context, target capture.LSN) (*confirmPoller, error) {
	p := &confirmPoller{done: make(chan confirmed, 1)}
	if b.o.slot == "" {
		return p, nil
	}
	conn, err := pgx.Connect(ctx, b.o.pgURL)
	if err != nil {
		return nil, fmt.Errorf("connecting the slot poller: %w", err)
	}
	p.conn = conn
	go func() {
		at, lsn, err := waitConfirmed(ctx, conn, b.o.slot, target, &p.seen)
		p.done <- confirmed{at, lsn, err}
	}()
	return p, nil
}

func (p *confirmPoller) close() {
	if p.conn != nil {
		p.conn.Close(context.Background())
	}
}

// waitDelivered waits until every event arrived, logging progress every
// --progress; it fails when the relay exits first or ctx ends.
func (b *bench) waitDelivered(ctx context.Context, col *collector, relay *child, t0 time.Time, target capture.LSN, seen *atomic.Uint64) error {
	o := b.o
	stop := b.every(ctx, func() {
		args := append([]any{"of", o.events}, col.progress(t0)...)
		if c := capture.LSN(seen.Load()); o.slot != "" && c < target {
			// Which side lags: the relay (slot far behind) or the consumer.
			args = append(args, "slot_behind_mib", round1(float64(target-c)/(1<<20)))
		}
		b.log.Info("draining", args...)
	})
	defer stop()
	relayDied := make(<-chan struct{})
	if relay != nil {
		relayDied = relay.done
	}
	select {
	case <-col.allIn:
		return nil
	case <-relayDied:
		return fmt.Errorf("the relay exited before delivering every event; see %s", o.relayLog)
	case <-ctx.Done():
		return fmt.Errorf("waiting for events: %d of %d after %s: %w", col.unique.Load(), o.events, o.timeout, ctx.Err())
	}
}

// awaitConfirmed records when the slot confirmed target. It waits at most
// --confirm-timeout: a relay that confirms late (Debezium at Connect's
// offset flush) or never (no event after its last one) is reported, not
// waited for.
func (b *bench) awaitConfirmed(s *Summary, p *confirmPoller, t0 time.Time, target capture.LSN) error {
	select {
	case c := <-p.done:
		if c.err != nil {
			return c.err
		}
		v := round3(c.at.Sub(t0).Seconds())
		s.ConfirmSeconds = &v
		s.ConfirmedLSN = c.lsn.String()
	case <-time.After(b.o.confirmTimeout):
		s.ConfirmTimeout = true
		s.ConfirmedLSN = capture.LSN(p.seen.Load()).String()
		b.log.Warn("the relay's slot did not confirm the last commit in time", "slot", b.o.slot,
			"target", target, "confirmed", s.ConfirmedLSN, "confirm_timeout", b.o.confirmTimeout)
	}
	return nil
}

// fill sets the figures that come from what the consumer received, timed
// from t0, for a run of events events.
func (s *Summary) fill(tr *Tracker, t0 time.Time, events int64) {
	s.Received = tr.Unique + tr.Duplicates
	s.Duplicates, s.Missing, s.OutOfOrder, s.Foreign, s.Invalid = tr.Duplicates, tr.Missing(), tr.OutOfOrder, tr.Foreign, tr.Invalid
	s.MissingSample = tr.MissingSample(10)
	s.Timeline = tr.Timeline()
	if !tr.First.IsZero() {
		s.FirstEventSeconds = round3(tr.First.Sub(t0).Seconds())
	}
	if tr.Unique > 0 {
		d := tr.Last.Sub(t0).Seconds()
		s.DrainSeconds = round3(d)
		s.ThroughputEPS = round1(float64(tr.Unique) / d)
		if tr.Unique > 1 && tr.Last.After(tr.First) {
			s.ThroughputAfterFirstEPS = round1(float64(tr.Unique-1) / tr.Last.Sub(tr.First).Seconds())
		}
	}
	if s.Mode == "backlog" {
		lat := tr.Latency()
		s.Latency = &lat
		s.LatencySource = "consumer receipt - payload ts (clock_timestamp() at INSERT); a backlog's includes its wait for the relay"
	}
	if s.Recvlogical != nil && s.Recvlogical.ThroughputEPS > 0 && s.Missing == 0 {
		s.RelayVsRecvlogical = round3(s.ThroughputEPS / s.Recvlogical.ThroughputEPS)
	}
	if s.CPUSeconds > 0 && events > 0 {
		s.CPUSecondsPerMillion = round3(s.CPUSeconds / float64(events) * 1e6)
	}
}

func (b *bench) startRelay(s *Summary) (*child, error) {
	c, err := startChild(b.o.relayCmd, b.o.relayLog)
	if err != nil {
		return nil, err
	}
	s.RelayLog = b.o.relayLog
	b.log.Info("relay started", "pid", c.cmd.Process.Pid, "log", b.o.relayLog)
	return c, nil
}

func (b *bench) stopRelay(c *child, s *Summary) {
	u, err := c.stop(b.o.stopGrace)
	if err != nil {
		b.log.Warn("stopping the relay", "err", err)
		return
	}
	s.PeakRSSMiB, s.CPUSeconds = u.PeakRSSMiB, u.CPUSeconds
	s.RelayExitCode, s.RelayStopSeconds, s.RelayKilled = &u.ExitCode, u.StopSeconds, u.Killed
	b.log.Info("relay stopped", "exit", u.ExitCode, "stop_seconds", u.StopSeconds, "peak_rss_mib", u.PeakRSSMiB, "cpu_seconds", u.CPUSeconds)
}

// every runs f every --progress until the returned stop is called.
func (b *bench) every(ctx context.Context, f func()) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(b.o.progress)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				f()
			case <-ctx.Done():
				return
			}
		}
	})
	return func() { cancel(); wg.Wait() }
}

func round1(v float64) float64 { return float64(int64(v*10+0.5)) / 10 }
