package conformance

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
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
	cases, err := LoadCases(filepath.Join(root, "testdata", "conformance"))
	if err != nil {
		t.Fatal(err)
	}
	var pick *regexp.Regexp
	if s := os.Getenv(EnvCases); s != "" {
		pick = regexp.MustCompile(s)
	}
	var selected []*Case
	for _, c := range cases {
		if (mode == "all" || c.CI) && (pick == nil || pick.MatchString(c.ID)) && PollComparable(c) {
			selected = append(selected, c)
		}
	}
	if len(selected) == 0 {
		t.Fatalf("no case selected (mode %q, %s=%q)", mode, EnvCases, os.Getenv(EnvCases))
	}
	work := t.TempDir()
	bin := os.Getenv(EnvRelayBin)
	if bin == "" {
		bin = filepath.Join(work, "outboxrelay")
		build := exec.Command("go", "build", "-o", bin, "github.com/outboxrelay/outboxrelay/cmd/outboxrelay")
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("building outboxrelay: %v\n%s", err, out)
		}
	}
	env := &Env{
		PGURL: pg, Brokers: brokers, RelayBin: bin, Root: root,
		RunID:   "p" + strconv.FormatInt(time.Now().UnixNano()/1e6%(36*36*36*36), 36),
		WorkDir: work, Timeout: 60 * time.Second, Quiet: 1500 * time.Millisecond, Logf: t.Logf,
	}
	verdicts := make([]*Verdict, len(selected))
	sem := make(chan struct{}, 3)
	var wg sync.WaitGroup
	for i, c := range selected {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			idx, _ := strconv.Atoi(strings.SplitN(c.ID, "-", 2)[0])
			verdicts[i] = env.RunPoll(ctx, c, idx)
		}()
	}
	wg.Wait()
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
