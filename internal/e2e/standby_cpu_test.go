package e2e_test

import (
	"context"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
)

// clockTick is the unit of utime and stime in /proc/<pid>/stat (USER_HZ,
// 100 on every Linux the bed runs on).
const clockTick = 10 * time.Millisecond

// TestStandbyCPU: the same load (1,000 events/s on the primary for
// OUTBOXRELAY_STANDBY_LOAD, default 5 s) relayed twice on one pair, by a
// relay decoding on the primary and by one decoding on the standby; each
// run relays every row (0 missing, order by id kept) and logs both servers'
// CPU per event, the whole cluster's and the relay's walsender's. On the
// standby run the primary has no logical walsender. BENCHMARKS.md
// ("Decoding on a standby") holds the 60 s run on 16, 17 and 18
// (OUTBOXRELAY_STANDBY_MAJORS=16,17,18 OUTBOXRELAY_STANDBY_LOAD=60s).
func TestStandbyCPU(t *testing.T) {
	t.Parallel()
	testbed.NewestStandbyMajor(t, testStandbyCPU)
}

func testStandbyCPU(t *testing.T, major int) {
	loadFor, _ := standbyDurations(t)
	sp, p, admin, standby, name := standbyOutbox(t, major, "sbcpu", "")
	for _, side := range []struct {
		name string
		host testbed.PrivateCluster
		cfg  func(slot string) string
	}{
		{"primary", p.primary, func(slot string) string {
			return p.config(t, slot, map[string]string{"database.hostname": "127.0.0.1", "database.port": strconv.Itoa(p.primary.Port), "publication.name": name})
		}},
		{"standby", p.standby, func(slot string) string {
			return standbyConfig(t, p, slot, map[string]string{"publication.name": name})
		}},
	} {
		slot := name + "_" + side.name[:1]
		pgExec(t, admin, `TRUNCATE public.outbox`)
		sp.WaitReplayed(t, admin, standby, 30*time.Second)
		cpu := measureRelayCPU(t, sp, admin, standby, side.host, slot, side.cfg(slot), loadFor)
		t.Logf("PostgreSQL %d, relay decoding on the %s: %d events; CPU per event: primary %.1f µs (its logical walsender %.1f µs), standby %.1f µs (its logical walsender %.1f µs), relay process %.1f µs (its whole run, -race in make test)",
			major, side.name, cpu.events, cpu.perEvent(cpu.primary), cpu.perEvent(cpu.primaryWalsender),
			cpu.perEvent(cpu.standby), cpu.perEvent(cpu.standbyWalsender), cpu.perEvent(cpu.relay))
		if side.name == "standby" && cpu.primaryLogical != 0 {
			t.Errorf("relay on the standby: the primary had %d logical slots during the load; want none", cpu.primaryLogical)
		}
	}
}

// relayCPU is the CPU time spent while one relay run relayed its events.
type relayCPU struct {
	events                             int
	primary, standby                   time.Duration // every process of the cluster
	primaryWalsender, standbyWalsender time.Duration // the relay slot's walsender, 0 where it does not run
	relay                              time.Duration // the relay process, user + system
	primaryLogical                     int           // logical slots on the primary, read during the load
}

func (c relayCPU) perEvent(d time.Duration) float64 {
	return float64(d.Microseconds()) / float64(max(c.events, 1))
}

// measureRelayCPU starts the relay on cfg (its slot, slot, on host), loads
// the primary at 1,000 events/s for loadFor, waits until every row is in
// the topic and replayed, checks order by id (outboxrelay verify), stops
// the relay and drops its slot. The window is from the slot streaming to
// the last row published.
func measureRelayCPU(t *testing.T, sp *testbed.StandbyPair, admin, standby *pgx.Conn, host testbed.PrivateCluster, slot, cfg string, loadFor time.Duration) relayCPU {
	t.Helper()
	slotConn := admin
	if host.Port == sp.Standby.Port {
		slotConn = standby
	}
	r := startRelay(t, cfg)
	testbed.WaitSlotActive(t, slotConn, slot, 60*time.Second)
	var walsender int
	if err := slotConn.QueryRow(context.Background(), `SELECT active_pid FROM pg_replication_slots WHERE slot_name = $1`, slot).Scan(&walsender); err != nil {
		t.Fatal(err)
	}
	p0, s0, w0 := clusterCPU(t, sp.Primary), clusterCPU(t, sp.Standby), processCPU(t, walsender)

	stop := make(chan struct{})
	ids := loadPrimary(pairConn(t, sp.Primary.Port), stop)
	time.Sleep(loadFor)
	var primaryLogical int
	if err := admin.QueryRow(context.Background(), `SELECT count(*) FROM pg_replication_slots WHERE slot_type = 'logical'`).Scan(&primaryLogical); err != nil {
		t.Fatal(err)
	}
	close(stop)
	committed := ids()
	sp.WaitReplayed(t, admin, standby, 60*time.Second)
	miss, records := missing(t, admin, slot+".orders", 2*time.Minute)
	p1, s1, w1 := clusterCPU(t, sp.Primary), clusterCPU(t, sp.Standby), processCPU(t, walsender)
	if len(miss) > 0 {
		t.Fatalf("relay on port %d: %d of %d events missing, e.g. %v\nrelay log:\n%s", host.Port, len(miss), len(committed), miss[:min(len(miss), 10)], r.logTail(30))
	}
	if report, err := osexec.Command(relayBinary, "verify", "--config", cfg, "--kafka-brokers", testbed.KafkaBrokers(t), "--order-by", "id", "--timeout", "2m").CombinedOutput(); err != nil {
		t.Errorf("outboxrelay verify: %v\n%s", err, report)
	}
	r.stop(t, 30*time.Second)
	c := relayCPU{events: len(committed), primary: p1 - p0, standby: s1 - s0, primaryLogical: primaryLogical,
		relay: r.cmd.ProcessState.UserTime() + r.cmd.ProcessState.SystemTime()}
	if host.Port == sp.Standby.Port {
		c.standbyWalsender = w1 - w0
	} else {
		c.primaryWalsender = w1 - w0
	}
	t.Logf("relay on port %d: %d rows committed, %d records", host.Port, len(committed), records)
	pgExec(t, slotConn, `SELECT pg_drop_replication_slot('`+slot+`')`)
	return c
}

// clusterCPU is the user + system CPU time of the cluster's postmaster and
// its children (the backends, walsenders and auxiliary processes running
// now; those that exited took theirs with them).
func clusterCPU(t *testing.T, c testbed.PrivateCluster) time.Duration {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(c.Data, "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	postmaster, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil {
		t.Fatalf("postmaster.pid of %s: %v", c.Data, err)
	}
	procs, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	var total time.Duration
	for _, path := range procs {
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(path)))
		ppid, cpu, ok := procStat(path)
		if ok && (pid == postmaster || ppid == postmaster) {
			total += cpu
		}
	}
	return total
}

// processCPU is pid's user + system CPU time.
func processCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	_, cpu, ok := procStat(fmt.Sprintf("/proc/%d/stat", pid))
	if !ok {
		t.Fatalf("process %d is gone", pid)
	}
	return cpu
}

// procStat reads the parent pid and utime + stime of /proc/<pid>/stat;
// false when the process is gone.
func procStat(path string) (ppid int, cpu time.Duration, ok bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, false
	}
	// After "pid (comm) ": state ppid ... utime (14th field) stime (15th).
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, 0, false
	}
	ppid, _ = strconv.Atoi(f[1])
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return ppid, time.Duration(utime+stime) * clockTick, true
}
