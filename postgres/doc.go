// Package postgres is the PostgreSQL toolkit both capture sources use
// (logical replication in package replication, polling in package poll):
// the connection configuration (the database.* keys and
// table.include.list) and its connections, which errors of a connection
// are transient (Retryable), identifier quoting, the catalog lookups of
// the outbox tables and of a table's columns (IncludedTables, Columns),
// and the outbox clean-up janitor's rounds (Janitor), to which each source
// adds its rule of which old rows may go (JanitorRule).
//
// It knows nothing of slots, publications or pgoutput, nor of polling,
// and imports no other package of the project but internal helpers
// (internal/confkey, internal/certerr, internal/rawconn, internal/textlist).
package postgres
