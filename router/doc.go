// Package router turns one decoded outbox row into the Kafka records that
// Debezium's Outbox EventRouter, running under Kafka Connect with the
// configured converters, would have produced: topic, partition, key bytes,
// value bytes, headers and timestamp.
//
// The package is pure: no I/O, no goroutines, no package-level state. It is
// the single place where EventRouter semantics live, so that the replication
// stream and the snapshot reader route rows identically.
package router
