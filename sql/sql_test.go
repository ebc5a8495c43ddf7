package sql

import (
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestOutboxGolden pins the outbox DDL of each PostgreSQL major against
// testdata: the golden files are what sql/outbox.sql and
// sql/outbox_pg18.sql said before outbox.sql became the one source.
func TestOutboxGolden(t *testing.T) {
	for major := 13; major <= 19; major++ {
		golden := "outbox_pg13-17.golden"
		if major >= 18 {
			golden = "outbox_pg18.golden"
		}
		t.Run(strconv.Itoa(major), func(t *testing.T) {
			got, err := Outbox(major)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", golden)
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("Outbox(%d) differs from %s (go test ./sql -update rewrites it):\n%s", major, path, got)
			}
		})
	}
}

func TestOutboxTooOld(t *testing.T) {
	if _, err := Outbox(12); err == nil {
		t.Error("Outbox(12): no error, want one (PostgreSQL 13 or newer)")
	}
}

// Regression (issue 27, item 9): role.sql and role_poll.sql created the
// relay's role with the password 'debezium@123', which whoever pasted the
// DDL then had, as did everyone who read this repository. The roles are
// created without a password, and the files say how to set one without it
// passing through the server's log: psql's \password.
func TestRoleHasNoPassword(t *testing.T) {
	for _, name := range []string{"role.sql", "role_poll.sql"} {
		b, err := fs.ReadFile(Files, name)
		if err != nil {
			t.Fatal(err)
		}
		var comments, statements []string
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "--") {
				comments = append(comments, line)
			} else {
				statements = append(statements, line)
			}
		}
		if sql := strings.ToUpper(strings.Join(statements, "\n")); strings.Contains(sql, "PASSWORD") || strings.Contains(sql, "'DEBEZIUM@123'") {
			t.Errorf("%s sets a password:\n%s", name, b)
		}
		if !strings.Contains(strings.Join(comments, "\n"), `\password debezium`) {
			t.Errorf("%s does not say how to set the role's password (psql's \\password debezium):\n%s", name, b)
		}
	}
}
