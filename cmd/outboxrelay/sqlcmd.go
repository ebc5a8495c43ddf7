package main

import (
	"flag"
	"fmt"
	"io"
	"io/fs"

	ddl "github.com/outboxrelay/outboxrelay/sql"
)

// printSQL prints the DDL kept in sql/, in the order to run it: the outbox
// table for the PostgreSQL major given by --pg-version, the least-privilege
// role, the publication, the clean-up script, and the consumers' processed_events
// table; with --mode poll, the polling outbox table with its partial index, its
// role and clean-up, and processed_events.
func printSQL(args []string, stdout, stderr io.Writer) error {
	fl := flag.NewFlagSet("sql", flag.ContinueOnError)
	fl.SetOutput(stderr)
	pgVersion := fl.Int("pg-version", 18, "PostgreSQL major version the DDL is for: 18 uses the built-in uuidv7(); 13 to 17 get an equivalent SQL function")
	mode := fl.String("mode", "logical", "capture mode (outbox.capture.mode): logical, or poll for the polling table and its partial index")
	if err := fl.Parse(args); err != nil {
		return usageError{err}
	}
	files := []string{"", "role.sql", "publication.sql", "cleanup.sql", "processed_events.sql"}
	switch *mode {
	case "logical":
	case "poll":
		files = []string{"outbox_poll.sql", "role_poll.sql", "cleanup_poll.sql", "processed_events.sql"}
	default:
		return usageError{fmt.Errorf("sql: --mode %q: write logical or poll", *mode)}
	}
	outbox := "outbox.sql"
	switch {
	case *pgVersion >= 18:
		outbox = "outbox_pg18.sql"
	case *pgVersion >= 13:
	default:
		return usageError{fmt.Errorf("sql: --pg-version %d: outboxrelay needs PostgreSQL 13 or newer", *pgVersion)}
	}
	if files[0] == "" {
		files[0] = outbox
	}
	for _, name := range files {
		b, err := fs.ReadFile(ddl.Files, name)
		if err != nil {
			return fmt.Errorf("sql: %w", err)
		}
		fmt.Fprintf(stdout, "-- sql/%s\n%s\n", name, b)
	}
	return nil
}
