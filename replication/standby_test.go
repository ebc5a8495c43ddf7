package replication

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

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
