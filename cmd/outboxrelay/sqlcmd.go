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
	if *pgVersion < 13 {
		return usageError{fmt.Errorf("sql: --pg-version %d: outboxrelay needs PostgreSQL 13 or newer", *pgVersion)}
	}
	files := []string{"outbox.sql", "role.sql", "publication.sql", "cleanup.sql", "processed_events.sql"}
	switch *mode {
	case "logical":
	case "poll":
		files = []string{"outbox_poll.sql", "role_poll.sql", "cleanup_poll.sql", "processed_events.sql"}
	default:
		return usageError{fmt.Errorf("sql: --mode %q: write logical or poll", *mode)}
	}
	for _, name := range files {
		text, err := sqlFile(name, *pgVersion)
		if err != nil {
			return fmt.Errorf("sql: %w", err)
		}
		fmt.Fprintf(stdout, "-- sql/%s\n%s\n", name, text)
	}
	return nil
}

// sqlFile is one file of sql/; the outbox table's for the PostgreSQL major
// (sql.Outbox).
func sqlFile(name string, pgVersion int) (string, error) {
	if name == "outbox.sql" {
		return ddl.Outbox(pgVersion)
	}
	b, err := fs.ReadFile(ddl.Files, name)
	return string(b), err
}
