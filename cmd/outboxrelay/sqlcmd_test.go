package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// TestPrintSQLOutboxByVersion: `outboxrelay sql` prints the outbox table of
// the major asked for (sql.Outbox): the SQL uuid function up to 17, the
// built-in uuidv7() from 18 on.
func TestPrintSQLOutboxByVersion(t *testing.T) {
	for _, tc := range []struct {
		version      string
		want, absent string
	}{
		{"13", "DEFAULT public.outbox_uuidv7()", "DEFAULT uuidv7()"},
		{"17", "CREATE OR REPLACE FUNCTION public.outbox_uuidv7()", "DEFAULT uuidv7()"},
		{"18", "DEFAULT uuidv7()", "outbox_uuidv7"},
	} {
		var out bytes.Buffer
		if err := printSQL([]string{"--pg-version", tc.version}, &out, io.Discard); err != nil {
			t.Fatalf("sql --pg-version %s: %v", tc.version, err)
		}
		s := out.String()
		if !strings.HasPrefix(s, "-- sql/outbox.sql\n") || !strings.Contains(s, tc.want) || strings.Contains(s, tc.absent) {
			t.Errorf("sql --pg-version %s: want the outbox table first, with %q and without %q:\n%s", tc.version, tc.want, tc.absent, s)
		}
		if !strings.Contains(s, "-- sql/role.sql\n") || !strings.Contains(s, "-- sql/processed_events.sql\n") {
			t.Errorf("sql --pg-version %s: role.sql or processed_events.sql missing:\n%s", tc.version, s)
		}
	}
	if err := printSQL([]string{"--pg-version", "12"}, io.Discard, io.Discard); err == nil {
		t.Error("sql --pg-version 12: no error, want one")
	}
}

// Regression (issue 27, item 9): `outboxrelay sql` printed CREATE ROLE …
// PASSWORD 'debezium@123', a password every reader of the repository
// knows, ready to paste. In both modes it prints the role without a
// password, and how to set one with psql's \password.
func TestPrintSQLRoleWithoutPassword(t *testing.T) {
	for _, mode := range []string{"logical", "poll"} {
		var out bytes.Buffer
		if err := printSQL([]string{"--mode", mode}, &out, io.Discard); err != nil {
			t.Fatalf("sql --mode %s: %v", mode, err)
		}
		s := out.String()
		if strings.Contains(s, "PASSWORD '") || strings.Contains(s, "debezium@123") {
			t.Errorf("sql --mode %s prints a password:\n%s", mode, s)
		}
		if !strings.Contains(s, "CREATE ROLE debezium LOGIN") || !strings.Contains(s, `\password debezium`) {
			t.Errorf("sql --mode %s: want the role and how to set its password (\\password debezium):\n%s", mode, s)
		}
	}
}
