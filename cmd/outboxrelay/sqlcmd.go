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
// role, the publication, the clean-up script, and the consumers' processed_events table.
func printSQL(args []string, stdout, stderr io.Writer) error {
	fl := flag.NewFlagSet("sql", flag.ContinueOnError)
	fl.SetOutput(stderr)
	pgVersion := fl.Int("pg-version", 18, "PostgreSQL major version the DDL is for: 18 uses the built-in uuidv7(); 13 to 17 get an equivalent SQL function")
	if err := fl.Parse(args); err != nil {
		return usageError{err}
	}
	outbox := "outbox.sql"
	switch {
	case *pgVersion >= 18:
		outbox = "outbox_pg18.sql"
	case *pgVersion >= 13:
	default:
		return usageError{fmt.Errorf("sql: --pg-version %d: outboxrelay needs PostgreSQL 13 or newer", *pgVersion)}
	}
	for _, name := range []string{outbox, "role.sql", "publication.sql", "cleanup.sql", "processed_events.sql"} {
		b, err := fs.ReadFile(ddl.Files, name)
		if err != nil {
			return fmt.Errorf("sql: %w", err)
		}
		fmt.Fprintf(stdout, "-- sql/%s\n%s\n", name, b)
	}
	return nil
}
