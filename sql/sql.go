package sql

import (
	"embed"
	"fmt"
	"io/fs"
	"strings"
)

// Files holds the DDL files of this directory, read-only, so that
// `outboxrelay sql` prints exactly what the test bed and the demo apply.
//
//go:embed *.sql
var Files embed.FS

// pg18Header replaces outbox.sql's comment and uuid function on
// PostgreSQL 18 and later.
const pg18Header = `-- The outbox table, PostgreSQL 18 and later: the built-in uuidv7() gives
-- time-ordered ids, so new keys land at the right edge of the primary key
-- index. Services insert one row here in the same transaction as their
-- business change; outboxrelay publishes each inserted row to Kafka.
`

// The parts of outbox.sql that differ on PostgreSQL 18.
const (
	uuidFunction = "CREATE OR REPLACE FUNCTION public.outbox_uuidv7()"
	functionEnd  = "\n$$;\n"
	uuidDefault  = "DEFAULT public.outbox_uuidv7()"
)

// Outbox is the outbox table's DDL for a PostgreSQL major: outbox.sql as
// it is for 13 to 17; from 18 on, the same table with the built-in
// uuidv7() as the id's default and without the file's outbox_uuidv7()
// function. outbox.sql is the one source of both.
func Outbox(major int) (string, error) {
	if major < 13 {
		return "", fmt.Errorf("outbox DDL for PostgreSQL %d: outboxrelay needs PostgreSQL 13 or newer", major)
	}
	b, err := fs.ReadFile(Files, "outbox.sql")
	if err != nil {
		return "", fmt.Errorf("outbox DDL: %w", err)
	}
	src := string(b)
	if major < 18 {
		return src, nil
	}
	start := strings.Index(src, uuidFunction)
	end := strings.Index(src, functionEnd)
	if start < 0 || end < start || !strings.Contains(src, uuidDefault) {
		return "", fmt.Errorf("outbox DDL for PostgreSQL %d: outbox.sql no longer has %s or its use as the default", major, uuidFunction)
	}
	table := src[end+len(functionEnd):]
	return pg18Header + strings.Replace(table, uuidDefault, "DEFAULT uuidv7()", 1), nil
}
