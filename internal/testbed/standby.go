package testbed

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// StandbyMajors are the PostgreSQL majors on which a hot standby can host
// a logical slot (16+) and the bed installs.
func StandbyMajors() []int { return []int{16, 17, 18} }

// EachStandbyMajor runs test as a subtest pgN for each of StandbyMajors.
func EachStandbyMajor(t *testing.T, test func(t *testing.T, major int)) {
	for _, major := range StandbyMajors() {
		t.Run(fmt.Sprintf("pg%d", major), func(t *testing.T) { test(t, major) })
	}
}

// EnvStandbyMajors lists, comma separated, the majors NewestStandbyMajor
// runs its tests on instead of the newest alone (e.g. 16,17,18).
const EnvStandbyMajors = "OUTBOXRELAY_STANDBY_MAJORS"

// NewestStandbyMajor runs test as a subtest pgN on the newest of
// StandbyMajors, or on each major EnvStandbyMajors lists: for the standby
// tests whose behaviour does not depend on the major, so that make test
// stays short (TestStandbyDecode and TestStandbySlotInvalidated run on
// every major).
func NewestStandbyMajor(t *testing.T, test func(t *testing.T, major int)) {
	majors := StandbyMajors()[len(StandbyMajors())-1:]
	if s := os.Getenv(EnvStandbyMajors); s != "" {
		majors = nil
		for _, f := range strings.Split(s, ",") {
			m, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || m < 16 {
				t.Fatalf("%s=%s: %q is not a PostgreSQL major of 16 or more", EnvStandbyMajors, s, f)
			}
			majors = append(majors, m)
		}
	}
	for _, major := range majors {
		t.Run(fmt.Sprintf("pg%d", major), func(t *testing.T) { test(t, major) })
	}
}

// ServerBinDir is the directory of PostgreSQL major's initdb, pg_ctl and
// postgres: the bed's own when it runs that major, else the embedded
// binaries scripts/devenv unpacks under OUTBOXRELAY_PG_BINARIES (default
// /var/cache/outboxrelay), else Debian's; "" when none is installed
// (`OUTBOXRELAY_PG_VERSION=N scripts/devenv up --postgres-only` installs it).
func ServerBinDir(t testing.TB, major int) string {
	t.Helper()
	if os.Getenv(EnvPostgresVersion) == strconv.Itoa(major) && os.Getenv(EnvPostgresBinDir) != "" {
		return os.Getenv(EnvPostgresBinDir)
	}
	root := os.Getenv("OUTBOXRELAY_PG_BINARIES")
	if root == "" {
		root = "/var/cache/outboxrelay"
	}
	dirs, _ := filepath.Glob(filepath.Join(root, fmt.Sprintf("postgresql-%d.*", major), "bin"))
	sort.Strings(dirs)
	dirs = append(dirs, fmt.Sprintf("/usr/lib/postgresql/%d/bin", major))
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d
		}
	}
	return ""
}

// StandbyPair is a private primary and a hot standby streaming from it
// through a physical slot (StandbySlot), hot_standby_feedback on, both
// with wal_level=logical: the standby can host logical slots.
type StandbyPair struct {
	Major            int
	Primary, Standby PrivateCluster
}

// StandbySlot is the physical slot the standby streams from.
const StandbySlot = "standby1"

// StartStandbyPair starts a primary of PostgreSQL major with primaryConf
// appended to its configuration, makes the standby by a low-level base
// backup (BaseBackup) with standbyConf appended, and waits until it
// streams. Both are stopped and removed at the end of the test.
func StartStandbyPair(t testing.TB, major int, primaryConf, standbyConf string) *StandbyPair {
	t.Helper()
	p := &StandbyPair{Major: major, Primary: StartPrivateClusterOf(t, major,
		"wal_level = logical\nmax_wal_senders = 10\nmax_replication_slots = 10\nwal_keep_size = '128MB'\n"+primaryConf)}
	admin := p.Connect(t, p.Primary)
	Exec(t, admin, `SELECT pg_create_physical_replication_slot('`+StandbySlot+`', true)`)
	p.Standby = BaseBackup(t, p.Primary, admin)
	conf := fmt.Sprintf("primary_conninfo = 'host=127.0.0.1 port=%d user=postgres dbname=postgres application_name=%s'\n"+
		"primary_slot_name = '%s'\nhot_standby = on\nhot_standby_feedback = on\n%s\n", p.Primary.Port, StandbySlot, StandbySlot, standbyConf)
	AppendFile(t, filepath.Join(p.Standby.Data, "postgresql.auto.conf"), conf)
	AppendFile(t, filepath.Join(p.Standby.Data, "standby.signal"), "")
	chownPostgres(t, p.Standby.Dir)
	p.Standby.Port = p.Standby.Start(t)
	WaitFor(t, "the standby to stream from the primary", 60*time.Second, func() bool {
		var n int
		_ = admin.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_replication WHERE application_name = $1 AND state = 'streaming'`, StandbySlot).Scan(&n)
		return n == 1
	})
	return p
}

// BaseBackup copies primary's data directory between pg_backup_start and
// pg_backup_stop (a low-level base backup, as PostgreSQL's docs describe
// it; the bed has no pg_basebackup) into a new directory owned by the
// postgres OS user, with the backup_label and tablespace_map
// pg_backup_stop returned. The copy is not started: add standby.signal and
// primary_conninfo, then Start it. admin is a superuser connection to the
// primary; the backup lives as long as its session.
func BaseBackup(t testing.TB, primary PrivateCluster, admin *pgx.Conn) PrivateCluster {
	t.Helper()
	ctx := context.Background()
	if _, err := admin.Exec(ctx, `SELECT pg_backup_start('outboxrelay-standby', true)`); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "outboxrelay-private-standby-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	chownPostgres(t, dir)
	AsPostgres(t, "cp", "-a", primary.Data, filepath.Join(dir, "data"))
	var label, spcmap string
	if err := admin.QueryRow(ctx, `SELECT labelfile, coalesce(spcmapfile, '') FROM pg_backup_stop(true)`).Scan(&label, &spcmap); err != nil {
		t.Fatal(err)
	}
	sb := PrivateCluster{Dir: dir, Data: filepath.Join(dir, "data"), Bin: primary.Bin}
	for _, f := range []string{"postmaster.pid", "postmaster.opts"} {
		os.Remove(filepath.Join(sb.Data, f))
	}
	// What the docs say to leave out: the WAL (the standby streams it
	// from the backup's start) and the primary's replication slots.
	for _, d := range []string{"pg_wal", "pg_replslot"} {
		entries, _ := os.ReadDir(filepath.Join(sb.Data, d))
		for _, e := range entries {
			if e.Name() != "archive_status" && e.Name() != "summaries" {
				os.RemoveAll(filepath.Join(sb.Data, d, e.Name()))
			}
		}
	}
	AppendFile(t, filepath.Join(sb.Data, "backup_label"), label)
	if spcmap != "" {
		AppendFile(t, filepath.Join(sb.Data, "tablespace_map"), spcmap)
	}
	// The standby's own socket directory: the copied configuration names
	// the primary's.
	AppendFile(t, filepath.Join(sb.Data, "postgresql.conf"), "unix_socket_directories = '"+dir+"'\n")
	chownPostgres(t, dir)
	return sb
}

// Connect opens a superuser connection to the pair's cluster c (its
// postgres database), closed at the end of the test.
func (p *StandbyPair) Connect(t testing.TB, c PrivateCluster) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		t.Fatalf("connecting to the private cluster on port %d: %v", c.Port, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// URL is the superuser DSN of the cluster's database db.
func (pg PrivateCluster) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", pg.Port, db)
}

// WaitReplayed waits until the standby has replayed everything the
// primary wrote so far.
func (p *StandbyPair) WaitReplayed(t testing.TB, primary, standby *pgx.Conn, timeout time.Duration) {
	t.Helper()
	var target string
	if err := primary.QueryRow(context.Background(), `SELECT pg_current_wal_lsn()::text`).Scan(&target); err != nil {
		t.Fatal(err)
	}
	WaitFor(t, "the standby to replay up to "+target, timeout, func() bool {
		var done bool
		_ = standby.QueryRow(context.Background(), `SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn`, target).Scan(&done)
		return done
	})
}

// PauseReplay pauses the standby's WAL replay (pg_wal_replay_pause) and
// waits until it is paused; ResumeReplay resumes it.
func (p *StandbyPair) PauseReplay(t testing.TB, standby *pgx.Conn) {
	t.Helper()
	Exec(t, standby, `SELECT pg_wal_replay_pause()`)
	WaitFor(t, "the standby's replay to pause", 30*time.Second, func() bool {
		var state string
		_ = standby.QueryRow(context.Background(), `SELECT pg_get_wal_replay_pause_state()`).Scan(&state)
		return state == "paused"
	})
}

// ResumeReplay resumes the standby's WAL replay.
func (p *StandbyPair) ResumeReplay(t testing.TB, standby *pgx.Conn) {
	t.Helper()
	Exec(t, standby, `SELECT pg_wal_replay_resume()`)
}

// Promote promotes the standby (pg_ctl promote, waiting until it accepts
// writes) and returns when it did.
func (p *StandbyPair) Promote(t testing.TB) time.Time {
	t.Helper()
	AsPostgres(t, filepath.Join(p.Standby.Bin, "pg_ctl"), "-D", p.Standby.Data, "-w", "-t", "60", "promote")
	return time.Now()
}

// Restart restarts the cluster (pg_ctl restart -m fast) on its port, its
// log where Start put it.
func (pg PrivateCluster) Restart(t testing.TB) {
	t.Helper()
	AsPostgres(t, filepath.Join(pg.Bin, "pg_ctl"), "-D", pg.Data, "-l", filepath.Join(pg.Dir, "postgres.log"), "-m", "fast", "-w", "-t", "60", "restart")
}

// LogStandbySnapshots calls pg_log_standby_snapshot() on the primary every
// 200 ms until the returned function is called, so that a logical slot
// being created on the standby finds a running-xacts record at once.
func (p *StandbyPair) LogStandbySnapshots(t testing.TB) (stop func()) {
	t.Helper()
	conn := p.Connect(t, p.Primary)
	done, quit := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			_, _ = conn.Exec(context.Background(), `SELECT pg_log_standby_snapshot()`)
			select {
			case <-quit:
				return
			case <-tick.C:
			}
		}
	}()
	return func() { close(quit); <-done }
}

// AppendFile appends s to the file at path, creating it (mode 0600).
func AppendFile(t testing.TB, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err == nil {
		_, err = f.WriteString(s)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		t.Fatal(err)
	}
}

func chownPostgres(t testing.TB, dir string) {
	t.Helper()
	if out, err := exec.Command("chown", "-R", "postgres:", dir).CombinedOutput(); err != nil {
		t.Fatalf("chown %s: %v\n%s", dir, err, out)
	}
}

// WaitFor polls cond every 50 ms, failing the test after timeout with
// what it waited for.
func WaitFor(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
	}
}
