package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxrelay/outboxrelay/capture"
)

// inserter writes the workload's transactions over Workers connections.
type inserter struct {
	pgURL    string
	table    string
	w        *Workload
	inserted atomic.Int64 // events committed so far (progress)
}

// InsertResult is what an insert phase measured.
type InsertResult struct {
	Start, End time.Time
	LastLSN    capture.LSN   // the latest workers' last-COMMIT LSN (see lastTxSQL)
	LagMax     time.Duration // steady: worst commit time behind schedule
}

// connect opens one connection per worker.
func (in *inserter) connect(ctx context.Context) ([]*pgx.Conn, error) {
	conns := make([]*pgx.Conn, 0, in.w.Workers)
	for range in.w.Workers {
		c, err := pgx.Connect(ctx, in.pgURL)
		if err != nil {
			closeAll(conns)
			return nil, fmt.Errorf("connecting inserter to PostgreSQL: %w", err)
		}
		conns = append(conns, c)
	}
	return conns, nil
}

func closeAll(conns []*pgx.Conn) {
	for _, c := range conns {
		c.Close(context.Background())
	}
}

// exec runs one simple-protocol query string (one or more statements).
func execSQL(ctx context.Context, c *pgx.Conn, sql string) error {
	_, err := c.PgConn().Exec(ctx, sql).ReadAll()
	return err
}

// lastTxSQL is a worker's last transaction, made explicit so that it reads
// pg_current_wal_insert_lsn() right before its COMMIT: the position where
// the commit record goes (later when other sessions write WAL in between).
// Any relay that confirmed the transaction has confirmed at least that, and
// unlike the insert position read after the COMMIT it does not move with
// WAL that other sessions on a shared server write afterwards (a relay that
// confirms only at its last event, like Debezium without heartbeats, never
// reaches that).
func lastTxSQL(insert string) string {
	return "BEGIN;" + insert + ";SELECT pg_current_wal_insert_lsn()::text;COMMIT;"
}

// execLast runs a query string that ends with lastTxSQL and returns the
// LSN its SELECT read.
func execLast(ctx context.Context, c *pgx.Conn, sql string) (capture.LSN, error) {
	res, err := c.PgConn().Exec(ctx, sql).ReadAll()
	if err != nil {
		return 0, err
	}
	for i := len(res) - 1; i >= 0; i-- {
		if len(res[i].Rows) == 1 && len(res[i].Rows[0]) == 1 {
			l, err := capture.ParseLSN(string(res[i].Rows[0][0]))
			if err != nil {
				return 0, fmt.Errorf("parsing pg_current_wal_insert_lsn %q: %w", res[i].Rows[0][0], err)
			}
			return l, nil
		}
	}
	return 0, errors.New("the last transaction returned no pg_current_wal_insert_lsn")
}

// backlog inserts every transaction as fast as it can: worker k runs
// transactions k, k+W, k+2W, …, txPerTrip of them per round trip as
// explicit BEGIN; INSERT …; COMMIT; blocks of one query string, so each
// transaction still commits on its own.
func (in *inserter) backlog(ctx context.Context, txPerTrip int) (InsertResult, error) {
	var res InsertResult
	conns, err := in.connect(ctx)
	if err != nil {
		return res, err
	}
	defer closeAll(conns)
	W := int64(in.w.Workers)
	txs := in.w.Txs()
	lsns := make([]capture.LSN, len(conns))
	errs := make([]error, len(conns))
	res.Start = time.Now()
	var wg sync.WaitGroup
	for k, c := range conns {
		wg.Go(func() {
			var sb strings.Builder
			for t := int64(k); t < txs; {
				sb.Reset()
				var rows int64
				last := false
				for n := 0; n < txPerTrip && t < txs; n++ {
					switch {
					case t+W >= txs:
						last = true
						sb.WriteString(lastTxSQL(in.w.TxSQL(in.table, t)))
					case txPerTrip > 1:
						sb.WriteString("BEGIN;" + in.w.TxSQL(in.table, t) + ";COMMIT;")
					default:
						sb.WriteString(in.w.TxSQL(in.table, t) + ";")
					}
					rows += min(int64(in.w.RowsPerTx), in.w.Events-t*int64(in.w.RowsPerTx))
					t += W
				}
				var err error
				if last {
					lsns[k], err = execLast(ctx, c, sb.String())
				} else {
					err = execSQL(ctx, c, sb.String())
				}
				if err != nil {
					errs[k] = fmt.Errorf("inserting into %s: %w", in.table, err)
					return
				}
				in.inserted.Add(rows)
			}
		})
	}
	wg.Wait()
	res.End = time.Now()
	for _, l := range lsns {
		res.LastLSN = max(res.LastLSN, l)
	}
	return res, errors.Join(errs...)
}

// steady inserts transaction t at start + dueAt(t), on worker t % W, until
// every transaction of the workload ran. A late commit does not delay the
// schedule of the next ones; the worst lateness is reported.
func (in *inserter) steady(ctx context.Context, rate float64) (InsertResult, error) {
	var res InsertResult
	conns, err := in.connect(ctx)
	if err != nil {
		return res, err
	}
	defer closeAll(conns)
	txs := in.w.Txs()
	queues := make([]chan int64, len(conns))
	for k := range queues {
		queues[k] = make(chan int64, 4096)
	}
	lsns := make([]capture.LSN, len(conns))
	lags := make([]time.Duration, len(conns))
	errs := make([]error, len(conns)+1)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	res.Start = time.Now()
	var wg sync.WaitGroup
	for k, c := range conns {
		wg.Go(func() {
			for t := range queues[k] {
				var err error
				if t+int64(len(conns)) >= txs {
					lsns[k], err = execLast(ctx, c, lastTxSQL(in.w.TxSQL(in.table, t)))
				} else {
					err = execSQL(ctx, c, in.w.TxSQL(in.table, t))
				}
				if err != nil {
					errs[k] = fmt.Errorf("inserting into %s: %w", in.table, err)
					cancel()
					for range queues[k] { // let the pacer finish
					}
					return
				}
				in.inserted.Add(min(int64(in.w.RowsPerTx), in.w.Events-t*int64(in.w.RowsPerTx)))
				lags[k] = max(lags[k], time.Since(res.Start)-dueAt(t, in.w.RowsPerTx, rate))
			}
		})
	}
	errs[len(conns)] = pace(ctx, res.Start, txs, in.w.RowsPerTx, rate, queues)
	for _, q := range queues {
		close(q)
	}
	wg.Wait()
	res.End = time.Now()
	for k := range conns {
		res.LastLSN = max(res.LastLSN, lsns[k])
		res.LagMax = max(res.LagMax, lags[k])
	}
	return res, errors.Join(errs...)
}

// pace hands transaction t to queue t % len(queues) at its due time.
func pace(ctx context.Context, start time.Time, txs int64, rowsPerTx int, rate float64, queues []chan int64) error {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for t := int64(0); t < txs; t++ {
		if wait := time.Until(start.Add(dueAt(t, rowsPerTx, rate))); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		select {
		case queues[t%int64(len(queues))] <- t:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
