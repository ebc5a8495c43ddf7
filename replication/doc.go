// Package replication is the logical replication capture source, and only
// that: preflight checks of the replication settings (version, wal_level,
// role, publication, slot), the session's decision about the slot
// (Decide), slot creation, the initial snapshot and its marker slot, the
// logical replication stream and its pgoutput decoding, standby status
// updates, the failover lock, and the janitor's rule that a row goes only
// once the slot confirmed past it (JanitorRule). Connections, quoting, the
// outbox tables' lookup and the janitor's rounds are package postgres's,
// which poll mode uses too.
//
// Source implements capture.Source: the relay package pulls decoded
// transactions from it and tells it, through capture.Progress, how far it
// may confirm. One goroutine owns both connections of a stream
// (invariant 3 of DESIGN.md). The package imports neither the router nor
// the sink nor a Kafka client.
package replication
