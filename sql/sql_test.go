package sql

import (
	"flag"
	"os"
	"path/filepath"
	"strconv"
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
