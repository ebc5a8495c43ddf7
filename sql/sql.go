package sql

import "embed"

// Files holds the DDL files of this directory, read-only, so that
// `outboxrelay sql` prints exactly what the test bed and the demo apply.
//
//go:embed *.sql
var Files embed.FS
