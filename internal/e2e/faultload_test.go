package e2e_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxrelay/outboxrelay/capture"
)

// faultTxSizes are the fault load's transaction sizes, in turn: single
// rows and multi-row transactions, 20 rows on average.
var faultTxSizes = []int{1, 40, 5, 25, 1, 60, 10, 3, 35, 20}

// faultAggregates is how many aggregates the fault load writes to; agg-K
// has aggregate type "customer" when K is a multiple of 3, else "order".
const faultAggregates = 30

// ordPerTx: a fault-load row's ord column is its transaction's number ×
// ordPerTx + its row number in the transaction (up to 60).
const ordPerTx = 1000

// faultLoad inserts outbox rows at a steady rate, each batch one
// transaction, from one connection, until finish. One connection commits
// one transaction at a time, so its transaction number is commit order,
// and the ord column (see ordPerTx) orders every row explicitly; the
// verifier's own tie-break, the rows' ctid, would follow insertion order
// only while one backend inserts. When the connection fails (a server restart) it reconnects
// and goes on; a transaction whose commit it did not see answered may or
// may not be in the table, which is why the tests read the table, not the
// load, for the events to expect.
type faultLoad struct {
	url      string
	insert   string
	rate     int // events per second
	stopOnce sync.Once
	stop     chan struct{}
	done     chan struct{}
	// Owned by the goroutine until done is closed.
	stats faultLoadStats
}

type faultLoadStats struct {
	// commits maps a committed transaction's number to the WAL insert
	// position read right after its commit returned: at or past the end
	// of its commit record.
	commits    map[int64]capture.LSN
	events     int // rows of the transactions in commits
	failed     int // transactions whose commit was not seen answered
	reconnects int
	elapsed    time.Duration
	lastErr    error
}

// rate is the events per second the load reached.
func (s faultLoadStats) rate() float64 {
	if s.elapsed <= 0 {
		return 0
	}
	return float64(s.events) / s.elapsed.Seconds()
}

func (s faultLoadStats) String() string {
	return fmt.Sprintf("%d events in %d transactions in %s (%.0f events/s); %d transactions failed, %d reconnects",
		s.events, len(s.commits), s.elapsed.Round(time.Millisecond), s.rate(), s.failed, s.reconnects)
}

// faultRate is the fault load's target rate: 2,000 events/s, or
// OUTBOXRELAY_FAULT_RATE.
func faultRate(t *testing.T) int {
	t.Helper()
	v := os.Getenv("OUTBOXRELAY_FAULT_RATE")
	if v == "" {
		return 2000
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("OUTBOXRELAY_FAULT_RATE=%q: want a positive number of events per second", v)
	}
	return n
}

func startFaultLoad(t *testing.T, b *privateBed, f *fixture, rate int) *faultLoad {
	t.Helper()
	return startFaultLoadSQL(t, b, f, rate, faultInsert(f))
}

// faultInsert is the fault load's statement: $2 outbox rows of
// transaction $1.
func faultInsert(f *fixture) string {
	return fmt.Sprintf(`INSERT INTO %s.outbox (aggregatetype, aggregateid, ord, payload)
			SELECT CASE WHEN k %% 3 = 0 THEN 'customer' ELSE 'order' END, 'agg-' || k, $1::bigint * %d + g, jsonb_build_object('tx', $1::bigint, 'g', g)
			FROM (SELECT g, ($1::bigint * 7 + g) %% %d AS k FROM generate_series(1, $2::int) g) s ORDER BY g`, f.name, ordPerTx, faultAggregates)
}

// startFaultLoadSQL runs the fault load with another statement of the same
// parameters (transaction number, rows).
func startFaultLoadSQL(t *testing.T, b *privateBed, f *fixture, rate int, insert string) *faultLoad {
	t.Helper()
	l := &faultLoad{
		url:    b.PostgresURL,
		rate:   rate,
		insert: insert,
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
		stats:  faultLoadStats{commits: map[int64]capture.LSN{}},
	}
	conn := b.Connect(t) // the first connection must work
	go l.run(conn)
	t.Cleanup(l.halt)
	return l
}

func (l *faultLoad) halt() {
	l.stopOnce.Do(func() { close(l.stop) })
	<-l.done
}

// finish stops the load and returns what it did.
func (l *faultLoad) finish(t *testing.T) faultLoadStats {
	t.Helper()
	l.halt()
	if len(l.stats.commits) == 0 {
		t.Fatalf("the fault load committed nothing: %v", l.stats.lastErr)
	}
	return l.stats
}

func (l *faultLoad) stopped() bool {
	select {
	case <-l.stop:
		return true
	default:
		return false
	}
}

// pause waits d or until the load is stopped; false means stopped.
func (l *faultLoad) pause(d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-l.stop:
		return false
	case <-timer.C:
		return true
	}
}

func (l *faultLoad) run(conn *pgx.Conn) {
	defer close(l.done)
	started := time.Now()
	defer func() { l.stats.elapsed = time.Since(started) }()
	next := time.Now()
	for tx := int64(1); !l.stopped(); tx++ {
		rows := faultTxSizes[int(tx)%len(faultTxSizes)]
		if wait := time.Until(next); wait > 0 {
			if !l.pause(wait) {
				return
			}
		} else if wait < -time.Second {
			next = time.Now() // fell behind (an outage): go on at the rate, no burst
		}
		next = next.Add(time.Duration(rows) * time.Second / time.Duration(l.rate))
		if conn == nil {
			if conn = l.reconnect(); conn == nil {
				return
			}
		}
		lsn, err := l.commit(conn, tx, rows)
		if err != nil {
			l.stats.failed++
			l.stats.lastErr = err
			conn.Close(context.Background())
			conn = nil
			continue
		}
		l.stats.commits[tx] = lsn
		l.stats.events += rows
	}
	if conn != nil {
		conn.Close(context.Background())
	}
}

// commit inserts one transaction of rows events and returns the WAL insert
// position read right after the commit.
func (l *faultLoad) commit(conn *pgx.Conn, tx int64, rows int) (capture.LSN, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := conn.Exec(ctx, l.insert, tx, rows); err != nil {
		return 0, fmt.Errorf("load insert: %w", err)
	}
	var lsn uint64
	if err := conn.QueryRow(ctx, `SELECT (pg_current_wal_insert_lsn() - '0/0')::bigint`).Scan(&lsn); err != nil {
		return 0, fmt.Errorf("load: reading the WAL insert position: %w", err)
	}
	return capture.LSN(lsn), nil
}

// reconnect connects again every 200 ms until it works or the load stops.
func (l *faultLoad) reconnect() *pgx.Conn {
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		conn, err := pgx.Connect(ctx, l.url)
		cancel()
		if err == nil {
			l.stats.reconnects++
			return conn
		}
		l.stats.lastErr = err
		if !l.pause(200 * time.Millisecond) {
			return nil
		}
	}
}

// rssSampler reads a process's VmRSS every interval until it exits or
// stop is called.
type rssSampler struct {
	stopOnce sync.Once
	stop     chan struct{}
	done     chan struct{}
	mu       sync.Mutex
	samples  []rssSample
}

type rssSample struct {
	at  time.Time
	kib int64
}

func sampleRSS(t *testing.T, pid int, every time.Duration) *rssSampler {
	t.Helper()
	s := &rssSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		ticker := time.NewTicker(every)
		defer ticker.Stop()
		for {
			kib, ok := vmRSS(pid)
			if !ok {
				return
			}
			s.mu.Lock()
			s.samples = append(s.samples, rssSample{time.Now(), kib})
			s.mu.Unlock()
			select {
			case <-s.stop:
				return
			case <-ticker.C:
			}
		}
	}()
	t.Cleanup(s.halt)
	return s
}

func (s *rssSampler) halt() {
	s.stopOnce.Do(func() { close(s.stop) })
	<-s.done
}

// peakMiB is the largest sample taken in [from, to) and how many samples
// there were.
func (s *rssSampler) peakMiB(from, to time.Time) (float64, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var peak int64
	n := 0
	for _, x := range s.samples {
		if !x.at.Before(from) && x.at.Before(to) {
			peak = max(peak, x.kib)
			n++
		}
	}
	return float64(peak) / 1024, n
}

// vmRSS reads VmRSS (KiB) from /proc/PID/status.
func vmRSS(pid int) (int64, bool) { return procStatusKiB(pid, "VmRSS") }

// procStatusKiB reads a KiB field of /proc/PID/status: VmRSS (resident
// now) or VmHWM (the peak since exec).
func procStatusKiB(pid int, field string) (int64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n, err == nil
		}
	}
	return 0, false // a zombie has no memory fields
}
