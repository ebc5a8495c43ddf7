package e2e_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// insertEvents inserts n events of aggregate type "orders", one statement
// (one transaction) of n rows, and returns their ids.
func insertEvents(t *testing.T, conn *pgx.Conn, f *fixture, n int) []int64 {
	t.Helper()
	return insertIDs(t, conn, fmt.Sprintf(`INSERT INTO %s.outbox (aggregatetype, aggregateid, payload)
		SELECT 'orders', 'agg-' || (g %% 10), jsonb_build_object('seq', g) FROM generate_series(1, %d) g ORDER BY g RETURNING id`, f.name, n))
}

// TestSnapshotNoData: with snapshot.mode=no_data, rows that existed before
// the slot was created are not sent; rows inserted after it are.
func TestSnapshotNoData(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "nodata")
	before := insertEvents(t, f.admin, f, 50)
	startRelay(t, f.config(t, map[string]string{"snapshot.mode": "no_data"}))
	f.waitStreaming(t)
	after := insertEvents(t, f.admin, f, 20)

	recs := f.consume(t, f.topic("orders"), len(after), 30*time.Second, 2*time.Second)
	got := make([]int64, len(recs))
	for i, r := range recs {
		got[i] = r.ID
	}
	if !slices.Equal(got, after) {
		t.Errorf("no_data sent ids %v; want only the rows inserted after the slot, %v (not the %d before it, %d..%d)",
			got, after, len(before), before[0], before[len(before)-1])
	}
}

// TestSnapshotInitial: with snapshot.mode=initial, rows that existed before
// the slot are sent exactly once, as the snapshot's reads, first; rows
// inserted while the relay starts and snapshots follow with no gap and no
// duplicate.
func TestSnapshotInitial(t *testing.T) {
	t.Parallel()
	const existing, during = 2000, 300
	f := newFixture(t, "initial")
	want := insertEvents(t, f.admin, f, existing)

	// A second connection keeps inserting, one row a transaction, from
	// before the relay starts until after it streams.
	load := connect(t)
	stop := make(chan struct{})
	type result struct {
		ids []int64
		err error
	}
	done := make(chan result, 1)
	go func() {
		var res result
		defer func() { done <- res }()
		q := fmt.Sprintf(`INSERT INTO %s.outbox (aggregatetype, aggregateid, payload) VALUES ('orders', 'live', '{}') RETURNING id`, f.name)
		for len(res.ids) < during {
			ids, err := queryIDs(context.Background(), load, q)
			if err != nil {
				res.err = err
				return
			}
			res.ids = append(res.ids, ids...)
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()

	r := startRelay(t, f.config(t, map[string]string{"snapshot.mode": "initial"}))
	f.waitStreaming(t)
	res := <-done
	close(stop)
	if res.err != nil {
		t.Fatalf("inserting while the relay starts: %v", res.err)
	}
	want = append(want, res.ids...)

	recs := f.consume(t, f.topic("orders"), len(want), 60*time.Second, 2*time.Second)
	counts := countIDs(recs)
	missing, dups := 0, 0
	for _, id := range want {
		switch counts[id] {
		case 0:
			missing++
		case 1:
		default:
			dups += counts[id] - 1
		}
	}
	if missing != 0 || dups != 0 || len(recs) != len(want) {
		t.Errorf("initial: %d records for %d rows: %d missing, %d duplicates", len(recs), len(want), missing, dups)
	}

	// The snapshot's reads come first on the (single-partition) topic: the
	// relay logs how many rows the snapshot read, and those must be the
	// oldest rows, the pre-existing ones among them.
	n, err := strconv.Atoi(r.logValue("snapshot: done", "rows"))
	if err != nil {
		t.Fatalf("no `snapshot: done rows=N` line in the relay log: %v", err)
	}
	if n < existing || n > len(recs) {
		t.Fatalf("snapshot read %d rows of %d records; want at least the %d that existed before the relay started", n, len(recs), existing)
	}
	inSnapshot := make(map[int64]bool, n)
	for _, rec := range recs[:n] {
		inSnapshot[rec.ID] = true
	}
	late := 0
	for _, id := range want[:existing] {
		if !inSnapshot[id] {
			late++
		}
	}
	if late != 0 {
		t.Errorf("%d pre-existing rows are not among the first %d records (the snapshot's reads)", late, n)
	}
	t.Logf("initial: %d rows existed, %d inserted during start-up; snapshot read %d, streaming sent %d; %d records, 0 missing, 0 duplicates",
		existing, len(res.ids), n, len(recs)-n, len(recs))
}
