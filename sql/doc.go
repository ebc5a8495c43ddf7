// Package sql embeds the DDL that users run to prepare a database for
// outboxrelay: the outbox table, the publication, the least-privilege role,
// the clean-up statement, and the processed_events table of package
// consumer. The binary prints it with `outboxrelay sql`, and the test bed
// and demo apply the same files.
package sql
