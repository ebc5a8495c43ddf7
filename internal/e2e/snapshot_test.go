package e2e_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
	"github.com/outboxrelay/outboxrelay/replication"
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

// TestSnapshotInitialKilled: the relay is killed (SIGKILL) in the middle of
// the initial snapshot of a new slot. The snapshot's pending marker is
// still there, so the next relay reads the table again before streaming:
// every row that existed, every row inserted meanwhile (one of them deleted
// again in its own transaction) and every row inserted after the restart
// reaches Kafka; only duplicates are allowed. Kafka is throttled (small
// batches, no linger) so that the snapshot lasts long enough to be killed.
func TestSnapshotInitialKilled(t *testing.T) {
	t.Parallel()
	const existing = 20000
	f := newFixture(t, "snapkill")
	want := insertEvents(t, f.admin, f, existing)
	marker := replication.SnapshotMarker(f.name) // the fixture drops it with the slot
	markerExists := func() bool {
		var n int
		if err := f.admin.QueryRow(context.Background(), `SELECT count(*) FROM pg_replication_slots WHERE slot_name = $1 AND slot_type = 'physical'`, marker).Scan(&n); err != nil {
			t.Fatalf("reading pg_replication_slots: %v", err)
		}
		return n == 1
	}
	cfg := f.config(t, map[string]string{"snapshot.mode": "initial", "batch.size": "1024", "linger.ms": "0"})

	first := startRelay(t, cfg)
	topic := f.topic("orders")
	deadline := time.Now().Add(60 * time.Second)
	for {
		ends, err := endOffsets(context.Background(), testbed.KafkaBrokers(t), []string{topic})
		if err == nil && ends[partitionKey{topic, 0}] > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no snapshot record in %s after 60 s (last error: %v); relay log:\n%s", topic, err, first.logTail(30))
		}
		time.Sleep(10 * time.Millisecond)
	}
	first.signal(t, syscall.SIGKILL)
	first.wait(t, 10*time.Second)
	if strings.Contains(first.log(), "snapshot: done") || !markerExists() {
		t.Fatalf("the snapshot finished before the kill (marker %s present: %v); make it longer", marker, markerExists())
	}
	slotAt := confirmedFlush(t, f.admin, f.name)
	sentBefore, err := endOffsets(context.Background(), testbed.KafkaBrokers(t), []string{topic})
	if err != nil {
		t.Fatal(err)
	}

	// While no relay runs: rows inserted after the slot's consistent point,
	// and one inserted and deleted in the same transaction (the outbox
	// pattern that keeps the table empty).
	want = append(want, insertEvents(t, f.admin, f, 100)...)
	tx, err := f.admin.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	deleted, err := queryIDs(context.Background(), tx.Conn(), fmt.Sprintf(`INSERT INTO %s.outbox (aggregatetype, aggregateid, payload) VALUES ('orders', 'gone', '{}') RETURNING id`, f.name))
	if err == nil {
		_, err = tx.Exec(context.Background(), fmt.Sprintf(`DELETE FROM %s.outbox WHERE id = $1`, f.name), deleted[0])
	}
	if err == nil {
		err = tx.Commit(context.Background())
	}
	if err != nil {
		t.Fatalf("insert and delete in one transaction: %v", err)
	}
	want = append(want, deleted...)

	second := startRelay(t, cfg)
	f.waitStreaming(t)
	want = append(want, insertEvents(t, f.admin, f, 100)...)
	recs := f.consume(t, topic, len(want), 90*time.Second, 2*time.Second)
	counts := countIDs(recs)
	missing := 0
	for _, id := range want {
		if counts[id] == 0 {
			missing++
		}
	}
	if missing != 0 {
		t.Errorf("%d of %d events missing after a relay was killed during the initial snapshot", missing, len(want))
	}
	if markerExists() {
		t.Errorf("marker slot %s still exists after the second snapshot finished", marker)
	}
	if !strings.Contains(second.log(), "the initial snapshot of this slot did not finish") {
		t.Errorf("the second relay did not say it redoes the snapshot; log:\n%s", second.logTail(30))
	}
	n, _ := strconv.Atoi(second.logValue("snapshot: done", "rows"))
	if n < existing+100 {
		t.Errorf("the second snapshot read %d rows; want at least the %d that existed and the 100 inserted after the kill", n, existing+100)
	}
	t.Logf("killed after %d snapshot records (slot still at its consistent point %s); the second relay read %d rows again; %d events, %d records, %d missing, %d duplicates",
		sentBefore[partitionKey{topic, 0}], slotAt, n, len(want), len(recs), missing, len(recs)-len(counts))
}
