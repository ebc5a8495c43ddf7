// Package replication owns the PostgreSQL side of outboxrelay: preflight
// checks (wal_level, role, publication, slot), slot creation, the initial
// snapshot, the logical replication stream, pgoutput decoding and the
// checkpoint that decides which LSN may be confirmed to the server.
//
// One goroutine owns the replication connection; everything it needs from
// the rest of the relay arrives through arguments and callbacks.
package replication
