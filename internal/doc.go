// Package internal groups helpers that are not part of outboxrelay's public
// API: the test bed (internal/testbed), configuration parsing shared by the
// commands (internal/config, internal/textlist), and reading topics back
// for the verifier, the conformance runner and the tests
// (internal/kafkaread).
package internal
