// Package e2e holds the end-to-end tests of outboxrelay: the real binary,
// built once, runs as a subprocess against the test bed's PostgreSQL and
// Kafka, so signals, exit codes and peak memory are the ones a user sees.
// Every test owns its schema, outbox table, publication, slot and topics,
// so the suite runs in parallel with the other packages' service tests.
package e2e
