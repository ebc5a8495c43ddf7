// Package router turns one decoded outbox row into the Kafka records that
// Debezium's Outbox EventRouter, running under Kafka Connect with the
// configured converters, would have produced: topic, partition, key bytes,
// value bytes, headers and timestamp.
//
// The package is pure: no I/O, no goroutines, no package-level state, and
// of the project it imports only capture, whose row it reads. It is
// the single place where EventRouter semantics live, so that the replication
// stream and the snapshot reader route rows identically.
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
