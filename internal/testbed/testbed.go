// Package testbed gives tests the addresses of the real PostgreSQL and Kafka
// that scripts/devenv starts. A test that needs a service asks for it here:
// when the service's variable is unset the test is skipped with one line
// saying how to run it, unless OUTBOXRELAY_REQUIRE_SERVICES=1 (make test, CI),
// in which case it fails, so a broken bed can never pass as "all skipped".
//
// It also holds the one private bed (StartPrivateBed: a PostgreSQL and a
// Kafka of a test's own, for the tests that stop, pause or kill a service),
// private PostgreSQL clusters (StartPrivateCluster: settings the shared bed
// cannot take) and the example connector.
package testbed

import (
	"os"
	"testing"
)

// Environment variables printed by `scripts/devenv env`.
const (
	EnvPostgresURL  = "OUTBOXRELAY_TEST_PG_URL"
	EnvKafkaBrokers = "OUTBOXRELAY_TEST_KAFKA_BROKERS"
	EnvRequire      = "OUTBOXRELAY_REQUIRE_SERVICES"
)

const howTo = "start the bed with `eval \"$(scripts/devenv up)\"` or run `make test`"

// Postgres returns the superuser DSN of the bed's PostgreSQL.
func Postgres(t testing.TB) string {
	t.Helper()
	return lookup(t, EnvPostgresURL, "PostgreSQL")
}

// KafkaBrokers returns the bed's Kafka bootstrap address (host:port).
func KafkaBrokers(t testing.TB) string {
	t.Helper()
	return lookup(t, EnvKafkaBrokers, "Kafka")
}

// Required reports whether service tests must run (and fail when the
// services are missing) instead of being skipped.
func Required() bool { return os.Getenv(EnvRequire) == "1" }

func lookup(t testing.TB, name, what string) string {
	t.Helper()
	v := os.Getenv(name)
	if v != "" {
		return v
	}
	if Required() {
		t.Fatalf("%s is required (%s=1) but %s is unset: %s", what, EnvRequire, name, howTo)
	}
	t.Skipf("skipping: needs %s (%s unset); %s", what, name, howTo)
	return ""
}

// Environment variables naming the bed's PostgreSQL server: its major
// (OUTBOXRELAY_PG_VERSION of scripts/devenv) and the directory of its
// initdb, pg_ctl and postgres, for tests that start clusters of their own.
// The clients (psql, pg_recvlogical) are Debian's, whatever the server.
const (
	EnvPostgresVersion = "OUTBOXRELAY_TEST_PG_VERSION"
	EnvPostgresBinDir  = "OUTBOXRELAY_TEST_PG_BINDIR"
)

// Environment variables of the bed's TLS and SASL endpoints.
const (
	EnvPostgresCA        = "OUTBOXRELAY_TEST_PG_CA"
	EnvPostgresWrongCA   = "OUTBOXRELAY_TEST_PG_WRONG_CA"
	EnvKafkaSASLBrokers  = "OUTBOXRELAY_TEST_KAFKA_SASL_BROKERS"
	EnvKafkaSASLUser     = "OUTBOXRELAY_TEST_KAFKA_SASL_USER"
	EnvKafkaSASLPassword = "OUTBOXRELAY_TEST_KAFKA_SASL_PASSWORD"
	EnvKafkaTLSBrokers   = "OUTBOXRELAY_TEST_KAFKA_TLS_BROKERS"
)

// PostgresTLS returns the CA that signed the bed's PostgreSQL server
// certificate (for 127.0.0.1 and localhost) and an unrelated CA.
func PostgresTLS(t testing.TB) (ca, wrongCA string) {
	t.Helper()
	return lookup(t, EnvPostgresCA, "PostgreSQL TLS"), lookup(t, EnvPostgresWrongCA, "PostgreSQL TLS")
}

// KafkaTLS returns the bed's SSL listener, whose certificate the bed's CA
// signed (the one PostgresTLS returns first).
func KafkaTLS(t testing.TB) (brokers, ca string) {
	t.Helper()
	return lookup(t, EnvKafkaTLSBrokers, "Kafka TLS listener"), lookup(t, EnvPostgresCA, "Kafka TLS listener")
}

// KafkaSASL returns the bed's SASL_PLAINTEXT listener (SCRAM-SHA-512) and
// its user and password.
func KafkaSASL(t testing.TB) (brokers, user, password string) {
	t.Helper()
	return lookup(t, EnvKafkaSASLBrokers, "Kafka SASL listener"), lookup(t, EnvKafkaSASLUser, "Kafka SASL listener"), lookup(t, EnvKafkaSASLPassword, "Kafka SASL listener")
}
