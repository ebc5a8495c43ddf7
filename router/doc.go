// Package router turns one decoded outbox row into the Kafka records that
// Debezium's Outbox EventRouter, running under Kafka Connect with the
// configured converters, would have produced: topic, partition, key bytes,
// value bytes, headers and timestamp.
//
// The package is pure: no I/O, no goroutines, no package-level state, and
// of the project it imports only capture, whose row it reads, and
// internal/confkey, through which it reads its options. It is the single
// place where EventRouter semantics live, so that both capture sources
// (logical replication, with its snapshot, and poll mode) route rows
// identically. It also names the dead-letter headers (HeaderDLQ*) that the
// relay's dead-letter topic and the consumer library both write.
//
// ParseConfig reads the connector JSON (transforms.<alias>.* options, the
// converters, extended.headers.enabled, topic.prefix); New compiles it into
// a Router; Route turns one Event (the source's capture.Row, as it
// yielded it, with its transaction's commit LSN and time) into zero or one
// Record, or returns a *RowError that names the row's LSN, event id,
// column and config key.
// Records point into a per-Router arena that the next Route call reuses
// (see Route), which keeps the hot path at one allocation per row.
// docs/configuration.md lists every option and docs/compatibility.md every
// deliberate difference from Debezium.
package router
