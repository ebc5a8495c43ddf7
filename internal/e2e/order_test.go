package e2e_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
)

// TestCommitOrder: transactions that interleave their inserts on three
// connections, and multi-row transactions between them, reach a
// single-partition topic in commit order, each transaction's rows in insert
// order.
func TestCommitOrder(t *testing.T) {
	t.Parallel()
	const (
		conns  = 3
		rounds = 30
		steps  = 4 // inserts per transaction per round
	)
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 0))
	t.Logf("seed %d", seed)

	f := newFixture(t, "order")
	startRelay(t, f.config(t, nil))
	f.waitStreaming(t)

	cs := make([]*pgx.Conn, conns)
	for i := range cs {
		cs[i] = connect(t)
	}
	insert := fmt.Sprintf(`INSERT INTO %s.outbox (aggregatetype, aggregateid, payload) VALUES ('orders', $1, '{}') RETURNING id`, f.name)

	var want []int64 // ids in commit order
	for round := range rounds {
		pending := make([][]int64, conns)
		for _, c := range cs {
			testbed.Exec(t, c, "BEGIN")
		}
		for step := range steps {
			for _, i := range rng.Perm(conns) {
				ids := insertIDs(t, cs[i], insert, fmt.Sprintf("r%d-c%d-s%d", round, i, step))
				pending[i] = append(pending[i], ids...)
			}
		}
		order := rng.Perm(conns)
		if rng.IntN(3) == 0 { // sometimes one of them rolls back
			testbed.Exec(t, cs[order[0]], "ROLLBACK")
			order = order[1:]
		}
		for _, i := range order {
			testbed.Exec(t, cs[i], "COMMIT")
			want = append(want, pending[i]...)
		}
		// A multi-row transaction between rounds.
		n := 1 + rng.IntN(50)
		ids := insertIDs(t, f.admin, fmt.Sprintf(`INSERT INTO %s.outbox (aggregatetype, aggregateid, payload)
			SELECT 'orders', 'multi-' || g, '{}' FROM generate_series(1, %d) g ORDER BY g RETURNING id`, f.name, n))
		want = append(want, ids...)
	}

	recs := f.consume(t, f.topic("orders"), len(want), 60*time.Second, time.Second)
	got := make([]int64, len(recs))
	for i, r := range recs {
		got[i] = r.ID
	}
	if !slices.Equal(got, want) {
		first := 0
		for first < min(len(got), len(want)) && got[first] == want[first] {
			first++
		}
		t.Fatalf("%d records, want %d in commit order; first difference at %d:\n got  %v\n want %v",
			len(got), len(want), first, got[first:min(first+10, len(got))], want[first:min(first+10, len(want))])
	}
	t.Logf("%d records from %d interleaved rounds and %d multi-row transactions arrived in commit order", len(got), rounds, rounds)
}
