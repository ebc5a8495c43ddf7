package replication

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/outboxrelay/outboxrelay/postgres"
)

// TestStandbyFinding: a hot standby is refused on PostgreSQL 13-15 naming
// the version, refused on 16+ without database.primary.hostname naming the
// key, and accepted with it; a primary has no standby finding.
func TestStandbyFinding(t *testing.T) {
	withPrimary := &Config{Config: postgres.Config{User: "u", Host: "standby", Port: 5433, DBName: "d", PrimaryHost: "primary", PrimaryPort: 5432}}
	without := &Config{Config: postgres.Config{User: "u", Host: "standby", Port: 5433, DBName: "d"}}
	failover := &Config{Config: withPrimary.Config, SlotFailover: true}
	cases := []struct {
		name       string
		cfg        *Config
		set        Settings
		ok         bool
		err        error
		wantInText []string
	}{
		{"15 standby", withPrimary, Settings{VersionNum: 150010, Version: "15.10", InRecovery: true}, false, ErrStandby, []string{"PostgreSQL 15.10", "from PostgreSQL 16 on"}},
		{"13 standby", withPrimary, Settings{VersionNum: 130022, Version: "13.22", InRecovery: true}, false, ErrStandby, []string{"PostgreSQL 13.22"}},
		{"16 standby without primary", without, Settings{VersionNum: 160010, Version: "16.10", InRecovery: true}, false, ErrStandby, []string{"set database.primary.hostname"}},
		// i30-review finding 3: slot.failover=true on a standby passed
		// preflight; PostgreSQL then refused the slot's FAILOVER (0A000)
		// after the whole initial snapshot, naming no key.
		{"17 standby with slot.failover", failover, Settings{VersionNum: 170006, Version: "17.6", InRecovery: true}, false, ErrStandby, []string{"slot.failover=false", "after a promotion", "standby:5433"}},
		{"16 standby with slot.failover", failover, Settings{VersionNum: 160010, Version: "16.10", InRecovery: true}, false, ErrStandby, []string{"slot.failover=false"}},
		{"17 standby with primary", withPrimary, Settings{VersionNum: 170006, Version: "17.6", InRecovery: true}, true, nil, []string{"primary:5432"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.set.WALLevel, c.set.Replication = "logical", true
			var got *Finding
			for _, f := range c.set.Findings(c.cfg) {
				if f.Name == "hot standby" {
					got = &f
				}
			}
			if got == nil {
				t.Fatal("no hot standby finding")
			}
			if got.OK != c.ok || !errors.Is(got.Err, c.err) {
				t.Fatalf("OK %v, err %v; want OK %v, err %v", got.OK, got.Err, c.ok, c.err)
			}
			text := got.Detail
			if got.Err != nil {
				text = got.Err.Error()
			}
			for _, w := range c.wantInText {
				if !strings.Contains(text, w) {
					t.Errorf("%q does not say %q", text, w)
				}
			}
		})
	}
	for _, f := range (Settings{VersionNum: 170006, WALLevel: "logical", Replication: true}).Findings(withPrimary) {
		if f.Name == "hot standby" {
			t.Errorf("a primary has a hot standby finding: %+v", f)
		}
	}
	// On a standby the failover finding of a primary ("synchronizes
	// failover slots to standbys", ✓) is not shown beside the refusal.
	for _, f := range (Settings{VersionNum: 170006, Version: "17.6", WALLevel: "logical", Replication: true, InRecovery: true}).Findings(failover) {
		if f.Name == "slot.failover" {
			t.Errorf("a standby with slot.failover has the primary's failover finding: %+v", f)
		}
	}
}

// TestSampleRefused: a replay sample the server refused with an ERROR on
// an open connection keeps the failover lock; a FATAL, a closed
// connection or a network error counts as the lost lock a failed ping
// was.
func TestSampleRefused(t *testing.T) {
	for _, c := range []struct {
		name   string
		err    error
		closed bool
		want   bool
	}{
		{"statement timeout", fmt.Errorf("reading the standby's replay lag: %w", &pgconn.PgError{Severity: "ERROR", Code: "57014"}), false, true},
		{"recovery conflict, connection ended", &pgconn.PgError{Severity: "FATAL", Code: "40001"}, false, false},
		{"error, then the connection closed", &pgconn.PgError{Severity: "ERROR", Code: "57014"}, true, false},
		{"network", fmt.Errorf("reading the standby's replay lag: %w", io.ErrUnexpectedEOF), false, false},
	} {
		if got := sampleRefused(c.err, c.closed); got != c.want {
			t.Errorf("%s: sampleRefused = %v, want %v", c.name, got, c.want)
		}
	}
}

// fakePrimary is database.primary.hostname for standbyNudger: connects
// are refused while refuse > 0, and Exec answers with execErr(call).
type fakePrimary struct {
	mu       sync.Mutex
	refuse   int
	connects int
	calls    int
	closed   int
	execErr  func(call int) error
}

func (f *fakePrimary) connect(ctx context.Context) (snapshotCaller, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.connects++
	if f.refuse > 0 {
		f.refuse--
		return nil, &pgconn.ConnectError{}
	}
	return fakePrimaryConn{f}, nil
}

func (f *fakePrimary) count() (connects, calls, closed int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.connects, f.calls, f.closed
}

type fakePrimaryConn struct{ f *fakePrimary }

func (c fakePrimaryConn) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	c.f.calls++
	if c.f.execErr != nil {
		return pgconn.CommandTag{}, c.f.execErr(c.f.calls)
	}
	return pgconn.CommandTag{}, nil
}

func (c fakePrimaryConn) Close(ctx context.Context) error {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	c.f.closed++
	return nil
}

// TestStandbyNudger pins i30 review finding 6: the nudges gave up at their
// first error, so a primary down when slot creation began (or restarted
// during it) left the creation waiting with no end after one WARN. Now the
// primary is tried again until the creation ends, a lasting failure is
// logged every warnEvery naming the primary and the error, and the
// privilege error keeps its connection and names the GRANT.
func TestStandbyNudger(t *testing.T) {
	cases := []struct {
		name      string
		primary   *fakePrimary
		warnEvery time.Duration
		until     func(connects, calls int) bool
		check     func(t *testing.T, f *fakePrimary, warns []string, log string)
	}{
		{"refused five times, then up", &fakePrimary{refuse: 5}, time.Hour,
			func(connects, calls int) bool { return calls >= 3 },
			func(t *testing.T, f *fakePrimary, warns []string, log string) {
				if connects, _, _ := f.count(); connects != 6 {
					t.Errorf("%d connects; want 6 (5 refused, then one kept)", connects)
				}
				if len(warns) != 1 || !strings.Contains(warns[0], "unreachable") || !strings.Contains(warns[0], "primary=primary:5432/d") || !strings.Contains(warns[0], "err=") {
					t.Errorf("WARNs %q; want one naming the primary, the error and that it is unreachable", warns)
				}
				if !strings.Contains(log, "answers again") {
					t.Errorf("no INFO when the primary answered again:\n%s", log)
				}
			}},
		{"down for good: a WARN every warnEvery", &fakePrimary{refuse: 1 << 30}, 30 * time.Millisecond,
			func(connects, calls int) bool { return connects >= 40 },
			func(t *testing.T, f *fakePrimary, warns []string, log string) {
				connects, _, _ := f.count()
				if len(warns) < 2 || len(warns) >= connects/2 {
					t.Errorf("%d WARNs in %d refused connects; want at least 2, rate-limited", len(warns), connects)
				}
			}},
		{"restarted during creation: connected again", &fakePrimary{execErr: func(call int) error {
			if call == 2 {
				return io.ErrUnexpectedEOF
			}
			return nil
		}}, time.Hour,
			func(connects, calls int) bool { return calls >= 4 },
			func(t *testing.T, f *fakePrimary, warns []string, log string) {
				if connects, _, closed := f.count(); connects != 2 || closed != 2 {
					t.Errorf("%d connects, %d closed; want 2 and 2 (the failed connection and the last one)", connects, closed)
				}
			}},
		{"no EXECUTE: the connection is kept, the GRANT named", &fakePrimary{execErr: func(int) error {
			return &pgconn.PgError{Code: "42501", Message: "permission denied for function pg_log_standby_snapshot"}
		}}, time.Hour,
			func(connects, calls int) bool { return calls >= 3 },
			func(t *testing.T, f *fakePrimary, warns []string, log string) {
				if connects, _, _ := f.count(); connects != 1 {
					t.Errorf("%d connects; want 1", connects)
				}
				if len(warns) != 1 || !strings.Contains(warns[0], "GRANT EXECUTE ON FUNCTION pg_log_standby_snapshot()") {
					t.Errorf("WARNs %q; want one naming the GRANT", warns)
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			var mu sync.Mutex
			n := &standbyNudger{connect: c.primary.connect, where: "primary:5432/d", slot: "s",
				log:   slog.New(slog.NewTextHandler(lockedWriter{&mu, &buf}, nil)),
				every: time.Millisecond, retry: 2 * time.Millisecond, warnEvery: c.warnEvery}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); n.run(ctx) }()
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
				connects, calls, _ := c.primary.count()
				if c.until(connects, calls) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("after 5 s: %d connects, %d calls", connects, calls)
				}
			}
			cancel()
			<-done
			var warns []string
			for _, line := range strings.Split(buf.String(), "\n") {
				if strings.Contains(line, "level=WARN") {
					warns = append(warns, line)
				}
			}
			c.check(t, c.primary, warns, buf.String())
		})
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestHeartbeatQueryWrong pins i30 review finding 2: on a standby session
// any failure of database.primary.hostname ended the session, so a primary
// down (or a wrong database.primary.port) stopped all decoding. Only a
// query the primary rejects as written still ends the relay, as on a
// primary; everything about reaching the primary is a WARN.
func TestHeartbeatQueryWrong(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"syntax error", fmt.Errorf("running heartbeat.action.query: %w", &pgconn.PgError{Code: "42601"}), true},
		{"no privilege on the heartbeat table", &pgconn.PgError{Code: "42501"}, true},
		{"refused", fmt.Errorf("connecting: %w", &pgconn.ConnectError{}), false},
		{"timed out", fmt.Errorf("running heartbeat.action.query: %w", context.DeadlineExceeded), false},
		{"read-only: the primary was demoted", &pgconn.PgError{Code: "25006"}, false},
		{"shutting down", &pgconn.PgError{Code: "57P01"}, false},
		{"connection lost", io.ErrUnexpectedEOF, false},
		// s36 review finding 6: the heartbeat's connection now checks the
		// primary as the preflight does; a refused pg_control_system()
		// there is the primary being unusable, not the query being wrong.
		{"pg_control_system() refused by the primary", &primaryUnusable{err: fmt.Errorf("connecting: %w", &pgconn.PgError{Code: "42501"})}, false},
		{"another cluster or in recovery", &primaryUnusable{err: fmt.Errorf("connecting: %w", postgres.ErrNotThePrimary)}, false},
	}
	for _, c := range cases {
		if got := heartbeatQueryWrong(c.err); got != c.want {
			t.Errorf("%s: heartbeatQueryWrong(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}
