package e2e_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
)

// partitionedFixture replaces the fixture's outbox with a table
// partitioned by id range, two partitions, published as viaRoot says.
func partitionedFixture(t *testing.T, short string, viaRoot bool) *fixture {
	t.Helper()
	f := newFixture(t, short)
	testbed.Exec(t, f.admin,
		`DROP PUBLICATION `+f.name,
		`DROP TABLE `+f.name+`.outbox`,
		`CREATE TABLE `+f.name+`.outbox (id bigserial, aggregatetype text NOT NULL, aggregateid text NOT NULL, type text NOT NULL DEFAULT 'e', payload jsonb, PRIMARY KEY (id)) PARTITION BY RANGE (id)`,
		`CREATE TABLE `+f.name+`.outbox_1 PARTITION OF `+f.name+`.outbox FOR VALUES FROM (1) TO (1001)`,
		`CREATE TABLE `+f.name+`.outbox_2 PARTITION OF `+f.name+`.outbox FOR VALUES FROM (1001) TO (100001)`,
		fmt.Sprintf(`CREATE PUBLICATION %s FOR TABLE %s.outbox WITH (publish_via_partition_root = %t)`, f.name, f.name, viaRoot),
		`GRANT SELECT ON ALL TABLES IN SCHEMA `+f.name+` TO debezium`,
	)
	return f
}

// TestPartitionedOutbox: a partitioned outbox published via its root is
// streamed under the table's own name, rows of every partition in commit
// order, and the initial snapshot reads every partition.
func TestPartitionedOutbox(t *testing.T) {
	t.Parallel()
	f := partitionedFixture(t, "parted", true)
	existing := insertEvents(t, f.admin, f, 1500) // rows in both partitions
	startRelay(t, f.config(t, map[string]string{"snapshot.mode": "initial"}))
	f.waitStreaming(t)
	streamed := insertEvents(t, f.admin, f, 1000)
	want := append(existing, streamed...)
	recs := f.consume(t, f.topic("orders"), len(want), 60*time.Second, time.Second)
	if len(recs) != len(want) {
		t.Fatalf("%d records for %d rows", len(recs), len(want))
	}
	for i, r := range recs {
		if r.ID != want[i] {
			t.Fatalf("record %d has id %d, want %d: rows of a partitioned outbox out of order", i, r.ID, want[i])
		}
	}
	t.Logf("partitioned outbox: %d rows read by the snapshot and %d streamed, over 2 partitions, in order, 0 missing, 0 duplicates", len(existing), len(streamed))
}

// TestBadInputPartitionedNotViaRoot: a partitioned outbox whose
// publication publishes under the partitions' names stops the relay with
// the statement that fixes it, not with a hint to add the table again.
func TestBadInputPartitionedNotViaRoot(t *testing.T) {
	t.Parallel()
	f := partitionedFixture(t, "partnoroot", false)
	r := startRelay(t, f.config(t, nil))
	code, msg := waitRelayExit(t, r, 30*time.Second)
	want := fmt.Sprintf(`preflight: publication missing or incomplete: %s.outbox is partitioned and publication %q publishes its rows under the names of its partitions; outboxrelay needs them under the table's own name: run ALTER PUBLICATION %s SET (publish_via_partition_root = true);`,
		f.name, f.name, f.name)
	wantExit(t, code, msg, 1, want)
}
