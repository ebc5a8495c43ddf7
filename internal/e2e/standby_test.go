package e2e_test

import (
	"context"
	"fmt"
	"os"
	osexec "os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
)

// standbyDurations are TestStandbyDecode's load and replay pause, short
// for make test; OUTBOXRELAY_STANDBY_LOAD=60s OUTBOXRELAY_STANDBY_PAUSE=30s
// is the run.
func standbyDurations(t *testing.T) (load, pause time.Duration) {
	t.Helper()
	load, pause = 5*time.Second, 3*time.Second
	for _, v := range []struct {
		env string
		d   *time.Duration
	}{{"OUTBOXRELAY_STANDBY_LOAD", &load}, {"OUTBOXRELAY_STANDBY_PAUSE", &pause}} {
		if s := os.Getenv(v.env); s != "" {
			d, err := time.ParseDuration(s)
			if err != nil {
				t.Fatalf("%s=%s: %v", v.env, s, err)
			}
			*v.d = d
		}
	}
	return load, pause
}

// standbyConfig is the relay's connector file for decoding on the pair's
// standby: database.hostname the standby, database.primary.* the primary.
func standbyConfig(t *testing.T, p pgPair, name string, extra map[string]string) string {
	t.Helper()
	c := map[string]string{
		"database.hostname": "127.0.0.1", "database.port": strconv.Itoa(p.standby.Port),
		"database.primary.hostname": "127.0.0.1", "database.primary.port": strconv.Itoa(p.primary.Port),
	}
	for k, v := range extra {
		c[k] = v
	}
	return p.config(t, name, c)
}

// TestStandbyDecode: on PostgreSQL 16, 17 and 18 the relay decodes on a hot
// standby (database.hostname) while a loader commits 1,000 events/s on the
// primary: the slot is created on the standby within 5 s of the relay's
// start (pg_log_standby_snapshot() through database.primary.hostname),
// the primary has no logical walsender, heartbeat.action.query writes on
// the primary; the standby's replay is paused (the relay's
// outboxrelay_standby_replay_lag_bytes and _seconds above 0 on /metrics
// meanwhile, back to 0 once replayed) and resumed, then the standby
// promoted mid-stream and loaded as the new primary: no event missing,
// order by id kept (outboxrelay verify). Before, preflight did not know
// standbys: the slot took 19.9 s (the next running-xacts record) and
// heartbeat.action.query failed on the read-only standby.
func TestStandbyDecode(t *testing.T) {
	t.Parallel()
	testbed.EachStandbyMajor(t, testStandbyDecode)
}

func testStandbyDecode(t *testing.T, major int) {
	loadFor, pauseFor := standbyDurations(t)
	sp, p, admin, standby, name := standbyOutbox(t, major, "sb", "")
	cfg := standbyConfig(t, p, name, map[string]string{"heartbeat.interval.ms": "500",
		"heartbeat.action.query": standbyHeartbeatQuery})

	checkStandby(t, cfg, admin, standby, p.standby.Port)
	started := time.Now()
	r := startRelayHTTP(t, cfg)
	testbed.WaitSlotActive(t, standby, name, 60*time.Second)
	addr := r.httpAddr(t, 10*time.Second)
	created := time.Since(started)
	t.Logf("PostgreSQL %d: the relay's slot on the standby active %s after the relay started (idle primary)", major, created.Round(time.Millisecond))
	if created > 5*time.Second {
		t.Errorf("the slot on the standby took %s; want under 5 s", created)
	}
	var logical int
	if err := admin.QueryRow(context.Background(), `SELECT count(*) FROM pg_replication_slots WHERE slot_type = 'logical'`).Scan(&logical); err != nil || logical != 0 {
		t.Errorf("the primary has %d logical slots (%v); want none: the slot lives on the standby", logical, err)
	}

	loader := pairConn(t, p.primary.Port)
	stop := make(chan struct{})
	ids := loadPrimary(loader, stop)
	time.Sleep(loadFor / 2)
	sp.PauseReplay(t, standby)
	paused := time.Now()
	// The relay's own lag stays 0 meanwhile (nothing reaches the slot);
	// its standby gauges, sampled every second, show the pause.
	waitMetric(t, addr, "outboxrelay_standby_replay_lag_bytes", pauseFor+5*time.Second, func(v float64) bool { return v > 0 })
	waitMetric(t, addr, "outboxrelay_standby_replay_lag_seconds", pauseFor+5*time.Second, func(v float64) bool { return v > 0 })
	time.Sleep(time.Until(paused.Add(pauseFor)))
	lag := replayLagBytes(t, admin)
	metricBytes := metric(t, addr, "outboxrelay_standby_replay_lag_bytes")
	metricSeconds := metric(t, addr, "outboxrelay_standby_replay_lag_seconds")
	sp.ResumeReplay(t, standby)
	t.Logf("replay paused %s under load: the standby's replay %d bytes behind the primary (pg_stat_replication); the relay reported outboxrelay_standby_replay_lag_bytes %.0f, _seconds %.1f",
		time.Since(paused).Round(time.Millisecond), lag, metricBytes, metricSeconds)
	if lag <= 0 {
		t.Errorf("replay paused: lag %d bytes; want it visible", lag)
	}
	time.Sleep(loadFor / 2)
	close(stop)
	committed := ids()
	sp.WaitReplayed(t, admin, standby, 60*time.Second)
	waitMetric(t, addr, "outboxrelay_standby_replay_lag_bytes", 30*time.Second, func(v float64) bool { return v == 0 })
	if v := metric(t, addr, "outboxrelay_standby_slot_invalidated"); v != 0 {
		t.Errorf("outboxrelay_standby_slot_invalidated = %v with a valid slot; want 0", v)
	}

	var beats int64
	if err := admin.QueryRow(context.Background(), `SELECT coalesce(max(beats), 0) FROM public.heartbeat`).Scan(&beats); err != nil {
		t.Fatal(err)
	}
	walsender := func() (pid int) {
		_ = standby.QueryRow(context.Background(), `SELECT coalesce(active_pid, 0) FROM pg_replication_slots WHERE slot_name = $1`, name).Scan(&pid)
		return pid
	}
	before := walsender()
	promoted := sp.Promote(t)
	stopAfter := make(chan struct{})
	after := loadPrimary(standby, stopAfter)
	time.Sleep(2 * time.Second)
	close(stopAfter)
	onPromoted := after()
	afterPid := walsender()
	t.Logf("the slot's walsender on the standby: pid %d before the promotion, %d %s after it", before, afterPid, time.Since(promoted).Round(10*time.Millisecond))
	if before == 0 || afterPid != before {
		t.Errorf("the slot's walsender: pid %d before the promotion, %d after it; want the same session streaming on", before, afterPid)
	}
	miss, records := missing(t, standby, name+".orders", 60*time.Second)
	t.Logf("%d rows committed on the primary before the promotion, %d on the promoted standby, %d records; heartbeat.action.query ran %d times on the primary", len(committed), len(onPromoted), records, beats)
	if len(onPromoted) == 0 {
		t.Errorf("no rows committed on the promoted standby")
	}
	if len(miss) > 0 {
		t.Errorf("%d events missing, e.g. %v\nrelay log:\n%s", len(miss), miss[:min(len(miss), 10)], r.logTail(30))
	}
	if beats == 0 {
		t.Errorf("heartbeat.action.query never ran on the primary")
	}
	verifyByID(t, cfg)
	if strings.Contains(r.log(), "level=ERROR") {
		t.Errorf("the relay logged errors:\n%s", r.logTail(40))
	}
}

// standbyRun is a standby pair with an outbox (named name) and a relay
// decoding on the standby, its slot there active.
type standbyRun struct {
	sp             *testbed.StandbyPair
	p              pgPair
	admin, standby *pgx.Conn // superuser connections to the primary and the standby
	name, cfg      string
	r              *relayProc
}

// startStandbyRun starts a PostgreSQL major pair, an outbox named prefix
// with the major and a number, and the relay on the standby.
func startStandbyRun(t *testing.T, major int, prefix string) *standbyRun {
	t.Helper()
	run := &standbyRun{}
	run.sp, run.p, run.admin, run.standby, run.name = standbyOutbox(t, major, prefix, "")
	run.cfg = standbyConfig(t, run.p, run.name, nil)
	run.r = startRelay(t, run.cfg)
	testbed.WaitSlotActive(t, run.standby, run.name, 60*time.Second)
	return run
}

// verifyByID runs outboxrelay verify --order-by id on cfg's outbox: every
// row in Kafka, in id order per aggregate.
func verifyByID(t *testing.T, cfg string) {
	t.Helper()
	report, err := osexec.Command(relayBinary, "verify", "--config", cfg, "--kafka-brokers", testbed.KafkaBrokers(t), "--order-by", "id", "--timeout", "2m").CombinedOutput()
	if err != nil {
		t.Errorf("outboxrelay verify: %v\n%s", err, report)
	}
}

// startRelayHTTP is startRelay serving /metrics on a port the kernel
// picks (relayProc.httpAddr reads it).
func startRelayHTTP(t *testing.T, cfg string) *relayProc {
	t.Helper()
	return startProcess(t, "relay", nil, relayBinary, "run", "--config", cfg, "--kafka-brokers", testbed.KafkaBrokers(t), "--log-format", "text", "--http-addr", "127.0.0.1:0")
}

// replayLagBytes is how far the standby's replay is behind the primary's
// WAL, as the primary sees it.
func replayLagBytes(t *testing.T, primary *pgx.Conn) int64 {
	t.Helper()
	var lag int64
	if err := primary.QueryRow(context.Background(), `SELECT (pg_current_wal_lsn() - replay_lsn)::bigint FROM pg_stat_replication WHERE application_name = $1`, testbed.StandbySlot).Scan(&lag); err != nil {
		t.Fatal(err)
	}
	return lag
}

// TestStandbyRestart: on PostgreSQL 18 (NewestStandbyMajor) the hot standby the
// relay decodes on is restarted (pg_ctl restart -m fast) while a loader
// commits on the primary: the relay loses its session and its failover
// lock's connection with the server, reconnects when the standby is back
// and resumes from the slot; no event missing, order by id kept
// (outboxrelay verify), the slot created once.
func TestStandbyRestart(t *testing.T) {
	t.Parallel()
	testbed.NewestStandbyMajor(t, testStandbyRestart)
}

func testStandbyRestart(t *testing.T, major int) {
	run := startStandbyRun(t, major, "rst")
	sp, p, admin, name, cfg, r := run.sp, run.p, run.admin, run.name, run.cfg, run.r
	stop := make(chan struct{})
	ids := loadPrimary(pairConn(t, p.primary.Port), stop)
	time.Sleep(1500 * time.Millisecond)
	restarting := time.Now()
	sp.Standby.Restart(t)
	back := time.Now()
	standby := pairConn(t, p.standby.Port) // the old connection went with the server
	testbed.WaitSlotActive(t, standby, name, 60*time.Second)
	active := time.Since(back)
	time.Sleep(1500 * time.Millisecond)
	close(stop)
	committed := ids()
	sp.WaitReplayed(t, admin, standby, 60*time.Second)
	miss, records := missing(t, admin, name+".orders", 60*time.Second)
	log := r.log()
	t.Logf("PostgreSQL %d: the standby restarted in %s; the relay's slot active again %s after it was back; %d rows committed on the primary, %d records, %d missing; %d failed sessions retried",
		major, back.Sub(restarting).Round(10*time.Millisecond), active.Round(10*time.Millisecond), len(committed), records, len(miss), strings.Count(log, "session failed, retrying"))
	if r.exited() {
		t.Fatalf("the relay exited (%v) after the standby's restart; log:\n%s", r.waitErr, r.logTail(30))
	}
	if len(miss) > 0 {
		t.Errorf("%d events missing, e.g. %v\nrelay log:\n%s", len(miss), miss[:min(len(miss), 10)], r.logTail(30))
	}
	if !strings.Contains(log, "session failed, retrying") {
		t.Errorf("the relay never lost its session while the standby restarted; log:\n%s", r.logTail(30))
	}
	if n := strings.Count(log, "replication slot created"); n != 1 {
		t.Errorf("the relay created the slot %d times; want once", n)
	}
	verifyByID(t, cfg)
}

// TestStandbySlotInvalidated: the relay decodes on a PostgreSQL 16, 17 and
// 18 standby while rows are committed on the primary; wal_level is lowered
// to replica on the primary and the primary restarted, which invalidates
// the standby's logical slot (a recovery conflict). The relay stops with
// exit 1, naming the reason and the fix, and the slot is not created
// again; every event committed before the change was published. Before,
// the invalidated slot was reported as a failed START_REPLICATION only.
func TestStandbySlotInvalidated(t *testing.T) {
	t.Parallel()
	testbed.EachStandbyMajor(t, testStandbySlotInvalidated)
}

func testStandbySlotInvalidated(t *testing.T, major int) {
	run := startStandbyRun(t, major, "inv")
	sp, p, admin, standby, name, r := run.sp, run.p, run.admin, run.standby, run.name, run.r
	stop := make(chan struct{})
	ids := loadPrimary(pairConn(t, p.primary.Port), stop)
	time.Sleep(2 * time.Second)
	close(stop)
	committed := ids()
	sp.WaitReplayed(t, admin, standby, 30*time.Second)
	if miss, records := missing(t, standby, name+".orders", 60*time.Second); len(miss) > 0 {
		t.Fatalf("%d of %d events missing before the conflict (%d records)", len(miss), len(committed), records)
	}

	pgExec(t, admin, `ALTER SYSTEM SET wal_level = replica`)
	sp.Primary.Restart(t)
	code := r.wait(t, 90*time.Second)
	log := r.log()
	var reason string
	_ = standby.QueryRow(context.Background(), `SELECT coalesce(to_jsonb(s)->>'invalidation_reason', (to_jsonb(s)->>'conflicting')) FROM pg_replication_slots s WHERE slot_name = $1`, name).Scan(&reason)
	last := log[strings.LastIndex(strings.TrimSpace(log), "\n")+1:]
	t.Logf("PostgreSQL %d: the slot's invalidation on the standby: %q; the relay exited %d: %s", major, reason, code, strings.TrimSpace(last))
	if wantReason := map[bool]string{true: "true", false: "wal_level_insufficient"}[major == 16]; reason != wantReason {
		t.Errorf("PostgreSQL %d: the slot's invalidation reads %q; want %q (wal_level lowered on the primary)", major, reason, wantReason)
	}
	want := "was invalidated by the server"
	if code != 1 || !strings.Contains(log, want) || !strings.Contains(log, "wal_level") || !strings.Contains(log, "snapshot.mode=when_needed") {
		t.Fatalf("the relay exited %d; want 1 with %q, the cause (wal_level) and the fix; log:\n%s", code, want, r.logTail(20))
	}
	if strings.Count(log, "replication slot created") != 1 {
		t.Errorf("the relay created the slot %d times; want once (never again after the invalidation)", strings.Count(log, "replication slot created"))
	}
}

// TestStandbyRefused: the relay pointed at a hot standby stops at start,
// exit 1, saying why: PostgreSQL 15 (a standby hosts logical slots from 16
// on; the version named), 16+ without database.primary.hostname (the key
// named), and poll mode (it marks rows; the standby is read-only).
func TestStandbyRefused(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		major int
		extra map[string]string
		want  []string
	}{
		{"pg15", 15, nil, []string{"is a hot standby", "PostgreSQL 15", "from PostgreSQL 16 on"}},
		{"no primary", 16, map[string]string{"database.primary.hostname": ""}, []string{"is a hot standby", "set database.primary.hostname"}},
		{"poll mode", 16, map[string]string{"outbox.capture.mode": "poll"}, []string{"poll mode marks each row it sends"}},
	}
	// One pair per major, shared by its cases: each is refused before it
	// makes anything on the standby.
	pairs := map[int]*testbed.StandbyPair{}
	for _, c := range cases {
		if pairs[c.major] == nil {
			pairs[c.major] = testbed.StartStandbyPair(t, c.major, "", "")
		}
		sp := pairs[c.major]
		t.Run(c.name, func(t *testing.T) {
			p := pgPair{primary: sp.Primary, standby: sp.Standby}
			admin, standby := pairConn(t, p.primary.Port), pairConn(t, p.standby.Port)
			name := fmt.Sprintf("ref_%d", time.Now().UnixNano()%1e9)
			p.outbox(t, admin, name)
			sp.WaitReplayed(t, admin, standby, 30*time.Second)
			r := startRelay(t, standbyConfig(t, p, name, c.extra))
			code := r.wait(t, 60*time.Second)
			log := r.log()
			for _, w := range c.want {
				if code != 1 || !strings.Contains(log, w) {
					t.Fatalf("the relay exited %d; want 1 saying %q; log:\n%s", code, w, r.logTail(10))
				}
			}
			if n := 0; standby.QueryRow(context.Background(), `SELECT count(*) FROM pg_replication_slots WHERE slot_type = 'logical'`).Scan(&n) == nil && n != 0 {
				t.Errorf("%d logical slots on the standby; want none", n)
			}
		})
	}
}

// checkStandby: outboxrelay check on a good standby setup passes and
// lists the standby's lines; with hot_standby_feedback off it fails
// saying how to fix it (the setting is restored after).
func checkStandby(t *testing.T, cfg string, admin, standby *pgx.Conn, port int) {
	t.Helper()
	out, code := runCheck(t, cfg)
	where := fmt.Sprintf("standby 127.0.0.1:%d/postgres", port)
	for _, w := range []string{"✓ hot standby", "✓ " + where + " hot_standby_feedback: on", "✓ " + where + " replay: ", "✓ primary 127.0.0.1:", "wal_level: logical"} {
		if code != 0 || !strings.Contains(out, w) {
			t.Fatalf("check on the standby: exit %d; want 0 and %q in:\n%s", code, w, out)
		}
	}
	setFeedback(t, admin, standby, "off")
	out, code = runCheck(t, cfg)
	setFeedback(t, admin, standby, "on")
	want := "✗ " + where + " hot_standby_feedback: off"
	if code == 0 || !strings.Contains(out, want) || !strings.Contains(out, "ALTER SYSTEM SET hot_standby_feedback = on") {
		t.Fatalf("check with hot_standby_feedback off: exit %d; want a failure %q with its fix in:\n%s", code, want, out)
	}
	t.Logf("check on the standby:\n%s", out)
}

// setFeedback sets hot_standby_feedback on the standby and waits until a
// new session sees it and, when on, until the primary's physical slot holds
// an xmin again (as PostgreSQL's own tests wait, in
// change_hot_standby_feedback_and_wait_for_xmins): a relay started before
// that can lose rows to the primary's vacuum (rows_removed).
func setFeedback(t *testing.T, admin, standby *pgx.Conn, value string) {
	t.Helper()
	pgExec(t, standby, `ALTER SYSTEM SET hot_standby_feedback = `+value, `SELECT pg_reload_conf()`)
	cfg := standby.Config()
	waitFor(t, "hot_standby_feedback = "+value+" on the standby", 30*time.Second, func() bool {
		conn, err := pgx.Connect(context.Background(), fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", cfg.Port))
		if err != nil {
			return false
		}
		defer conn.Close(context.Background())
		var got string
		_ = conn.QueryRow(context.Background(), `SHOW hot_standby_feedback`).Scan(&got)
		return got == value
	})
	if value == "on" {
		waitFor(t, "the primary's slot "+testbed.StandbySlot+" to hold the standby's xmin", 30*time.Second, func() bool {
			var held bool
			_ = admin.QueryRow(context.Background(), `SELECT xmin IS NOT NULL FROM pg_replication_slots WHERE slot_name = $1`, testbed.StandbySlot).Scan(&held)
			return held
		})
	}
}
