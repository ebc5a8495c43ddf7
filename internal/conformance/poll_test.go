package conformance

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
)

// TestConformancePoll runs the cases that only insert rows (those of make
// test; every case with OUTBOXRELAY_CONFORMANCE=all) through outboxrelay
// in logical and in poll mode and fails on any byte of difference between
// their records, key by key. It needs no Debezium.
func TestConformancePoll(t *testing.T) {
	mode := os.Getenv(EnvMode)
	if mode == "off" {
		t.Skipf("skipping: %s=off", EnvMode)
	}
	pg, brokers := testbed.Postgres(t), testbed.KafkaBrokers(t)
	root := repoRoot(t)
	selected, _ := selectCases(t, root, mode, PollComparable)
	work := t.TempDir()
	env := &Env{
		PGURL: pg, Brokers: brokers, RelayBin: relayBinary(t, root, work), Root: root,
		RunID:   "p" + strconv.FormatInt(time.Now().UnixNano()/1e6%(36*36*36*36), 36),
		WorkDir: work, Timeout: 60 * time.Second, Quiet: 1500 * time.Millisecond, Logf: t.Logf,
	}
	verdicts := runCases(env, selected, 3, PollAgainstLogical)
	for _, v := range verdicts {
		t.Logf("%-34s %-12s logical %d records, poll %d", v.Case.ID, v.Summary(), v.Debezium, v.Relay)
		if v.Err != nil {
			t.Errorf("%s: %v", v.Case.ID, v.Err)
		}
		for _, p := range v.Problems {
			t.Errorf("%s: poll mode differs from logical mode: %s", v.Case.ID, p)
		}
	}
}
