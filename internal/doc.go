// Package internal groups helpers that are not part of outboxrelay's public
// API: the test bed (internal/testbed), configuration parsing shared by the
// commands (internal/config, internal/confkey: every key declared once,
// internal/textlist, internal/msgprefix: the
// message prefix lists the relay and outbox.Emitter share), and reading
// topics back for the verifier, the conformance runner and the tests
// (internal/kafkaread); socket reads and writes that leave the runtime's
// monitor thread asleep (internal/rawconn).
package internal
