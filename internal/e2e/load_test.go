package e2e_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/outboxrelay/outboxrelay/capture"
)

// loadTx is one committed transaction of a load.
type loadTx struct {
	ids []int64
	// lsnAfter is pg_current_wal_insert_lsn() read right after the commit
	// returned: at or past the end of the transaction's commit record.
	lsnAfter capture.LSN
}

// load inserts rowsPerTx events every tick, each batch one transaction,
// from its own goroutine and connection, until finish.
type load struct {
	stopOnce sync.Once
	stop     chan struct{}
	done     chan struct{}
	txs      []loadTx // owned by the goroutine until done is closed
	err      error    // likewise
}

func startLoad(t *testing.T, f *fixture, rowsPerTx int, tick time.Duration) *load {
	t.Helper()
	conn := connect(t)
	l := &load{stop: make(chan struct{}), done: make(chan struct{})}
	insert := fmt.Sprintf(`INSERT INTO %s.outbox (aggregatetype, aggregateid, payload)
		SELECT 'orders', 'agg-' || (g %% 20), jsonb_build_object('g', g) FROM generate_series(1, %d) g ORDER BY g RETURNING id`, f.name, rowsPerTx)
	go func() {
		defer close(l.done)
		ctx := context.Background()
		ticker := time.NewTicker(tick)
		defer ticker.Stop()
		for {
			select {
			case <-l.stop:
				return
			case <-ticker.C:
			}
			ids, err := queryIDs(ctx, conn, insert)
			if err != nil {
				l.err = fmt.Errorf("load insert: %w", err)
				return
			}
			var lsn uint64
			if err := conn.QueryRow(ctx, `SELECT (pg_current_wal_insert_lsn() - '0/0')::bigint`).Scan(&lsn); err != nil {
				l.err = fmt.Errorf("load: reading the WAL insert position: %w", err)
				return
			}
			l.txs = append(l.txs, loadTx{ids: ids, lsnAfter: capture.LSN(lsn)})
		}
	}()
	t.Cleanup(func() { l.halt() })
	return l
}

func (l *load) halt() {
	l.stopOnce.Do(func() { close(l.stop) })
	<-l.done
}

// finish stops the load and returns its committed transactions.
func (l *load) finish(t *testing.T) []loadTx {
	t.Helper()
	l.halt()
	if l.err != nil {
		t.Fatal(l.err)
	}
	return l.txs
}

func loadIDs(txs []loadTx) []int64 {
	var ids []int64
	for _, tx := range txs {
		ids = append(ids, tx.ids...)
	}
	return ids
}
