package check

import (
	"errors"
	"strings"
	"testing"

	"github.com/outboxrelay/outboxrelay/postgres"
	"github.com/outboxrelay/outboxrelay/replication"
)

// TestReplayLine: i30-review finding 9. The replay line measured only
// received − replayed, so a standby cut off from its primary (both stopped)
// read ✓ "replayed everything received". Now it says how far the replay is
// behind the primary's pg_current_wal_lsn(), and only when the primary is
// the standby's own (the same system identifier); a paused replay is ✗.
func TestReplayLine(t *testing.T) {
	lsn := func(s string) *string { return &s }
	n := func(v int64) *int64 { return &v }
	cases := []struct {
		name     string
		p        primaryState
		paused   string
		replayed *string
		received *int64
		ok       bool
		want     string
	}{
		// Received − replayed is 0: before, this read "replayed everything received".
		{"cut off, 16 MiB behind the primary", primaryState{current: lsn("0/2000000")}, "not paused", lsn("0/1000000"), n(0), true, "16.0 MiB behind the primary's WAL"},
		{"primary unreachable", primaryState{err: errNoConn}, "not paused", lsn("0/1000000"), n(0), true, "how far it is behind the primary's WAL is unknown"},
		{"another cluster", primaryState{current: lsn("0/2000000"), verified: postgres.ErrNotThePrimary}, "not paused", lsn("0/1000000"), n(0), true, "is unknown"},
		{"received, not replayed", primaryState{current: lsn("0/1000100")}, "not paused", lsn("0/1000000"), n(256), true, "256 B received and not replayed yet"},
		{"paused", primaryState{current: lsn("0/1000000")}, "paused", lsn("0/1000000"), nil, false, "paused (paused)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ch := &checker{pg: &replication.Config{Config: postgres.Config{Host: "s", Port: 1, Ports: []int{1}, DBName: "d"}}}
			ch.replay("standby s:1/d", c.paused, c.p.behind(c.replayed), c.received, nil)
			r := ch.results[0]
			if r.OK != c.ok || !strings.Contains(r.Detail, c.want) {
				t.Fatalf("replay line OK %v %q; want OK %v saying %q", r.OK, r.Detail, c.ok, c.want)
			}
		})
	}
}

var errNoConn = errors.New("no connection")
