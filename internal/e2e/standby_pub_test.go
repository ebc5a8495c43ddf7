package e2e_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
)

// TestStandbyPublication: i30-review finding 4. With the default
// publication.autocreate.mode=all_tables and no publication yet, the relay
// on a hot standby ran CREATE PUBLICATION there, which failed ("read-only
// transaction") with the fix "create it as an administrator". Now the DDL
// runs on database.primary.hostname, the relay waits until the standby
// replayed it, and relays; in filtered mode a table added to the list is
// added by ALTER PUBLICATION on the primary too. PostgreSQL 17.
func TestStandbyPublication(t *testing.T) {
	t.Parallel()
	sp := testbed.StartStandbyPair(t, 17, "", "")
	p := pgPair{primary: sp.Primary, standby: sp.Standby}
	admin, standby := pairConn(t, p.primary.Port), pairConn(t, p.standby.Port)
	name := fmt.Sprintf("pub_%d", time.Now().UnixNano()%1e9)
	pgExec(t, admin, `CREATE TABLE public.outbox (id bigserial PRIMARY KEY, aggregatetype text NOT NULL, aggregateid text NOT NULL, payload jsonb)`)
	sp.WaitReplayed(t, admin, standby, 30*time.Second)

	cfg := standbyConfig(t, p, name, map[string]string{"publication.autocreate.mode": "all_tables"})
	r := startRelay(t, cfg)
	testbed.WaitSlotActive(t, standby, name, 60*time.Second)
	var all bool
	if err := admin.QueryRow(context.Background(), `SELECT puballtables FROM pg_publication WHERE pubname = $1`, name).Scan(&all); err != nil || !all {
		t.Fatalf("publication %s on the primary: FOR ALL TABLES %v (%v); want it created there FOR ALL TABLES\nrelay log:\n%s", name, all, err, r.logTail(20))
	}
	pgExec(t, admin, `INSERT INTO public.outbox (aggregatetype, aggregateid, payload) SELECT 'orders', 'agg-' || g, jsonb_build_object('g', g) FROM generate_series(1, 50) g`)
	sp.WaitReplayed(t, admin, standby, 30*time.Second)
	if miss, records := missing(t, standby, name+".orders", 60*time.Second); len(miss) > 0 || records < 50 {
		t.Fatalf("%d of 50 events missing (%d records)\nrelay log:\n%s", len(miss), records, r.logTail(20))
	}
	log := r.log()
	if strings.Contains(log, "read-only") || !strings.Contains(log, "the standby replayed the publication's DDL run on the primary") {
		t.Errorf("the relay's log does not show the DDL on the primary and the wait for its replay:\n%s", r.logTail(30))
	}
	r.stop(t, 30*time.Second)

	// Filtered: a second publication for the first table, then a table
	// added to table.include.list: ALTER PUBLICATION … SET TABLE on the
	// primary.
	filtered := name + "_f"
	pgExec(t, admin, `CREATE PUBLICATION `+filtered+` FOR TABLE public.outbox`,
		`CREATE TABLE public.outbox2 (id bigserial PRIMARY KEY, aggregatetype text NOT NULL, aggregateid text NOT NULL, payload jsonb)`)
	sp.WaitReplayed(t, admin, standby, 30*time.Second)
	cfg = standbyConfig(t, p, name, map[string]string{"publication.name": filtered, "publication.autocreate.mode": "filtered",
		"table.include.list": `public\.outbox,public\.outbox2`})
	r = startRelay(t, cfg)
	testbed.WaitFor(t, "the relay to stream again", 60*time.Second, func() bool { return strings.Contains(r.log(), "publication altered") || r.exited() })
	var tables string
	if err := admin.QueryRow(context.Background(), `SELECT string_agg(tablename, ',' ORDER BY tablename) FROM pg_publication_tables WHERE pubname = $1`, filtered).Scan(&tables); err != nil || tables != "outbox,outbox2" {
		t.Fatalf("publication %s on the primary covers %q (%v); want outbox,outbox2\nrelay log:\n%s", filtered, tables, err, r.logTail(20))
	}
	if r.exited() || strings.Contains(r.log(), "level=ERROR") {
		t.Fatalf("the relay failed after ALTER PUBLICATION on the primary:\n%s", r.logTail(30))
	}
	r.stop(t, 30*time.Second)

	// s36 review finding 5: the publication exists on the primary and the
	// standby has not replayed it yet (replay paused, as after a restart
	// while the preflight waited): the preflight read "missing" on the
	// standby, CREATE failed on the primary with 42710, and the relay
	// stopped. Now it waits for the replay and reads it.
	made := name + "_m"
	sp.PauseReplay(t, standby)
	pgExec(t, admin, `CREATE PUBLICATION `+made+` FOR ALL TABLES WITH (publish_via_partition_root = true)`)
	r = startRelay(t, standbyConfig(t, p, name, map[string]string{"publication.name": made, "publication.autocreate.mode": "all_tables"}))
	testbed.WaitFor(t, "the preflight to find the publication made on the primary", 60*time.Second, func() bool {
		return strings.Contains(r.log(), "the publication exists already") || r.exited()
	})
	sp.ResumeReplay(t, standby)
	testbed.WaitFor(t, "the preflight to see it replayed", 60*time.Second, func() bool {
		return strings.Contains(r.log(), "the standby replayed the publication's DDL run on the primary") || r.exited()
	})
	testbed.WaitSlotActive(t, standby, name, 60*time.Second)
	if r.exited() || strings.Contains(r.log(), "level=ERROR") || strings.Contains(r.log(), "already exists") {
		t.Fatalf("the relay failed on a publication made on the primary and not yet replayed:\n%s", r.logTail(30))
	}
	r.stop(t, 30*time.Second)

	// s36 review finding 5, the promotion: the standby promoted while the
	// preflight waits for the replay of its CREATE on the primary. The
	// DDL's WAL may be lost with the old primary, so it runs again on the
	// promoted server (here it was received, and CREATE answers 42710) —
	// or, as the promotion replays what was received before it ends
	// recovery, the preflight's next look sees the DDL replayed (seen in a
	// CI run): either way the publication is on the promoted server.
	promoted := name + "_p"
	sp.PauseReplay(t, standby)
	r = startRelay(t, standbyConfig(t, p, name, map[string]string{"publication.name": promoted, "publication.autocreate.mode": "all_tables"}))
	testbed.WaitFor(t, "the preflight to create the publication on the primary", 60*time.Second, func() bool {
		return strings.Contains(r.log(), "SET synchronous_commit") || strings.Contains(r.log(), "waiting for the standby") || r.exited() || publicationOn(t, admin, promoted)
	})
	sp.Promote(t)
	testbed.WaitFor(t, "the preflight to run the DDL on the promoted server or see it replayed", 60*time.Second, func() bool {
		log := r.log()
		return strings.Contains(log, "was promoted while waiting for its replay") || strings.Contains(log, "the standby replayed the publication's DDL run on the primary") || r.exited()
	})
	testbed.WaitSlotActive(t, standby, name, 60*time.Second)
	if r.exited() || strings.Contains(r.log(), "level=ERROR") || !publicationOn(t, standby, promoted) {
		t.Fatalf("the relay after a promotion during the replay wait:\n%s", r.logTail(30))
	}
	r.stop(t, 30*time.Second)
}

// publicationOn says whether publication name exists on conn's server.
func publicationOn(t *testing.T, conn *pgx.Conn, name string) bool {
	t.Helper()
	var n int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_publication WHERE pubname = $1`, name).Scan(&n); err != nil {
		t.Fatalf("reading pg_publication: %v", err)
	}
	return n == 1
}

// TestStandbyWrongPrimary: i30-review finding 7. database.primary.hostname
// was never checked to be the standby's primary: the relay sent its
// heartbeats, pg_log_standby_snapshot() and the janitor's DELETEs (whose
// rule compares WAL positions) to any server named there. Now run stops
// at preflight (exit 1) and check fails, both naming both hosts and the
// key, when the system identifiers differ. PostgreSQL 17, the "primary" an
// unrelated private cluster.
func TestStandbyWrongPrimary(t *testing.T) {
	t.Parallel()
	_, p, _, standby, name := standbyOutbox(t, 17, "wp", "")
	other := testbed.StartPrivateClusterOf(t, 17, "wal_level = logical")
	cfg := standbyConfig(t, p, name, map[string]string{"database.primary.port": fmt.Sprint(other.Port)})
	hosts := []string{fmt.Sprintf("127.0.0.1:%d/postgres (database.primary.hostname)", other.Port), fmt.Sprintf("127.0.0.1:%d/postgres (database.hostname)", p.standby.Port)}

	r := startRelay(t, cfg)
	code := r.wait(t, 60*time.Second)
	log := r.log()
	for _, w := range append([]string{"is not the primary of database.hostname", "system identifier"}, hosts...) {
		if code != 1 || !strings.Contains(log, w) {
			t.Fatalf("the relay with an unrelated database.primary.hostname exited %d; want 1 saying %q; log:\n%s", code, w, r.logTail(10))
		}
	}
	var slots int
	if err := standby.QueryRow(context.Background(), `SELECT count(*) FROM pg_replication_slots WHERE slot_type = 'logical'`).Scan(&slots); err != nil || slots != 0 {
		t.Errorf("%d logical slots on the standby (%v); want none", slots, err)
	}

	out, code := runCheck(t, cfg)
	want := fmt.Sprintf("✗ primary 127.0.0.1:%d/postgres system identifier", other.Port)
	if code == 0 || !strings.Contains(out, want) || !strings.Contains(out, hosts[1]) {
		t.Fatalf("check with an unrelated database.primary.hostname: exit %d; want a failure %q naming both hosts in:\n%s", code, want, out)
	}
	t.Logf("check:\n%s", out)

	// s36 review finding 3: a "primary" of the same cluster that is in
	// recovery (here the standby itself, as an old primary rejoined as a
	// standby would be) passed the identifier check. Its connection asks
	// for target_session_attrs=read-write, and pgx's bare "read only
	// connection" was taken for an unreachable primary.
	self := standbyConfig(t, p, name, map[string]string{"database.primary.port": fmt.Sprint(p.standby.Port)})
	key := fmt.Sprintf("database.primary.hostname 127.0.0.1:%d/postgres is read-only", p.standby.Port)
	r = startRelay(t, self)
	code = r.wait(t, 60*time.Second)
	for _, w := range []string{key, "in recovery", "set database.primary.hostname and database.primary.port to the current primary"} {
		if code != 1 || !strings.Contains(r.log(), w) {
			t.Fatalf("the relay with database.primary.hostname in recovery exited %d; want 1 saying %q; log:\n%s", code, w, r.logTail(10))
		}
	}
	out, code = runCheck(t, self)
	if want := fmt.Sprintf("✗ primary 127.0.0.1:%d/postgres connection", p.standby.Port); code == 0 || !strings.Contains(out, want) || !strings.Contains(out, key) {
		t.Fatalf("check with database.primary.hostname in recovery: exit %d; want %q saying %q in:\n%s", code, want, key, out)
	}
}

// TestStandbyCheckRefusals: check on a hot standby shows as ✗ what run
// refuses there. i30-review finding 3: slot.failover=true passed check and
// preflight, and PostgreSQL refused the slot's FAILOVER late. Finding 10:
// poll mode passed check while run refused it (poll.ErrStandby). Finding 9:
// the replay line now reports how far replay is behind the primary's WAL
// and the WAL receiver's status. PostgreSQL 17.
func TestStandbyCheckRefusals(t *testing.T) {
	t.Parallel()
	_, p, _, standby, name := standbyOutbox(t, 17, "cr", "")

	out, code := runCheck(t, standbyConfig(t, p, name, nil))
	for _, w := range []string{fmt.Sprintf("✓ standby 127.0.0.1:%d/postgres replay: ", p.standby.Port), "behind the primary's WAL (pg_current_wal_lsn() on the primary",
		fmt.Sprintf("✓ standby 127.0.0.1:%d/postgres WAL receiver: streaming", p.standby.Port),
		fmt.Sprintf("✓ primary 127.0.0.1:%d/postgres system identifier", p.primary.Port)} {
		if code != 0 || !strings.Contains(out, w) {
			t.Fatalf("check on the standby: exit %d; want 0 and %q in:\n%s", code, w, out)
		}
	}

	out, code = runCheck(t, standbyConfig(t, p, name, map[string]string{"slot.failover": "true"}))
	if want := "✗ hot standby: database.hostname is a hot standby and slot.failover is true"; code == 0 || !strings.Contains(out, want) || !strings.Contains(out, "fix: set slot.failover=false") {
		t.Fatalf("check with slot.failover=true on a standby: exit %d; want %q and its fix in:\n%s", code, want, out)
	}
	r := startRelay(t, standbyConfig(t, p, name, map[string]string{"slot.failover": "true"}))
	if code := r.wait(t, 60*time.Second); code != 1 || !strings.Contains(r.log(), "set slot.failover=false") {
		t.Fatalf("the relay with slot.failover=true on a standby exited %d; want 1 naming slot.failover=false; log:\n%s", code, r.logTail(10))
	}

	poll := standbyConfig(t, p, name, map[string]string{"outbox.capture.mode": "poll"})
	out, code = runCheck(t, poll)
	r = startRelay(t, poll)
	rc := r.wait(t, 60*time.Second)
	want := "✗ hot standby: poll mode: database.hostname is a hot standby (127.0.0.1:"
	if code == 0 || rc != 1 || !strings.Contains(out, want) || !strings.Contains(out, "poll mode marks each row it sends") {
		t.Fatalf("check in poll mode on a standby: exit %d, run exited %d; want both to fail, check with %q in:\n%s", code, rc, want, out)
	}
	if line := checkLine(out, "✗ hot standby: "); !strings.Contains(r.log(), strings.TrimPrefix(line, "✗ hot standby: ")) {
		t.Errorf("check's line %q is not run's refusal; run's log:\n%s", line, r.logTail(10))
	}

	// The standby cut off from its primary: before, ✓ "replayed
	// everything received".
	testbed.AsPostgres(t, filepath.Join(p.primary.Bin, "pg_ctl"), "-D", p.primary.Data, "-w", "-t", "60", "-m", "fast", "stop")
	waitFor(t, "the standby's WAL receiver to lose its primary", 60*time.Second, func() bool {
		var streaming bool
		err := standby.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE status = 'streaming') > 0 FROM pg_stat_wal_receiver`).Scan(&streaming)
		return err == nil && !streaming
	})
	out, code = runCheck(t, standbyConfig(t, p, name, nil))
	for _, w := range []string{fmt.Sprintf("✗ standby 127.0.0.1:%d/postgres WAL receiver: ", p.standby.Port), "the standby receives no WAL from its primary",
		fmt.Sprintf("✗ primary 127.0.0.1:%d/postgres connection", p.primary.Port)} {
		if code == 0 || !strings.Contains(out, w) {
			t.Fatalf("check with the primary stopped: exit %d; want a failure with %q in:\n%s", code, w, out)
		}
	}
	t.Logf("check with the primary stopped:\n%s", out)
}

// checkLine is the line of check's output that starts with prefix.
func checkLine(out, prefix string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}
