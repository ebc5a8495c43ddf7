package check

import (
	"bytes"
	"strings"
	"testing"

	"github.com/outboxrelay/outboxrelay/postgres"
	"github.com/outboxrelay/outboxrelay/sink"
)

func TestFormatChecks(t *testing.T) {
	var b bytes.Buffer
	failed := Format(&b, []Result{
		{Name: "wal_level", OK: true, Detail: "logical"},
		{Name: "PostgreSQL verification (database.sslmode)", OK: true, Warn: true, Detail: "database.sslmode=prefer: no certificate is verified", Fix: "set verify-full"},
		{Name: "publication p", Detail: "does not exist", Fix: "CREATE PUBLICATION p FOR TABLE public.outbox;"},
		{Name: "columns of public.outbox", Detail: "a missing; b missing", Fix: "ALTER TABLE x ADD COLUMN a text;\nALTER TABLE x ADD COLUMN b text;"},
	})
	want := `✓ wal_level: logical
⚠ PostgreSQL verification (database.sslmode): database.sslmode=prefer: no certificate is verified
    fix: set verify-full
✗ publication p: does not exist
    fix: CREATE PUBLICATION p FOR TABLE public.outbox;
✗ columns of public.outbox: a missing; b missing
    fix: ALTER TABLE x ADD COLUMN a text;
    fix: ALTER TABLE x ADD COLUMN b text;
`
	if failed != 2 || b.String() != want {
		t.Errorf("Format = %d,\n%s\nwant 2,\n%s", failed, b.String(), want)
	}
}

// Regression (issue 27, item 7): check showed nothing for a weakened
// PostgreSQL verification. Each weakness of the settings is a ⚠ line (not
// a failure) with the key and the fix; verify-full is one ✓.
func TestVerificationLines(t *testing.T) {
	for _, tc := range []struct {
		mode, rootCert string
		want           string
	}{
		{"prefer", "", "⚠ PostgreSQL verification (database.sslmode): database.sslmode=prefer: TLS only if the server offers it"},
		{"require", "", "⚠ PostgreSQL verification (database.sslmode): database.sslmode=require: TLS, but the server's certificate is not verified"},
		{"prefer", "/ca.crt", "⚠ PostgreSQL verification (database.sslrootcert): database.sslrootcert is set, but database.sslmode=prefer does not verify"},
		{"verify-full", "/ca.crt", "✓ PostgreSQL verification: database.sslmode=verify-full"},
	} {
		cfg, err := postgres.ParseConfig(map[string]string{"database.hostname": "h", "database.user": "u", "database.dbname": "d",
			"table.include.list": "public.outbox", "database.sslmode": tc.mode, "database.sslrootcert": tc.rootCert})
		if err != nil {
			t.Fatal(err)
		}
		c := &checker{}
		c.verification(&cfg)
		var b bytes.Buffer
		if failed := Format(&b, c.results); failed != 0 || !strings.Contains(b.String(), tc.want) {
			t.Errorf("sslmode %s, sslrootcert %q: %d failed,\n%s\nwant a line starting %q", tc.mode, tc.rootCert, failed, b.String(), tc.want)
		}
		if tc.mode != "verify-full" && !strings.Contains(b.String(), "fix: set \"database.sslmode\": \"verify-full\"") {
			t.Errorf("sslmode %s: no fix naming verify-full:\n%s", tc.mode, b.String())
		}
	}
}

// Regression (issue 27, item 7): check passed a weakened Kafka
// verification without a word. Each weakness is a ⚠ line (not a failure)
// with the key and the fix; SASL_SSL with host-name checks is one ✓.
func TestKafkaVerificationLines(t *testing.T) {
	for _, tc := range []struct {
		cfg  sink.Config
		want string
	}{
		{sink.Config{SecurityProtocol: "PLAINTEXT"}, "⚠ Kafka verification (security.protocol): security.protocol=PLAINTEXT: no TLS and no authentication"},
		{sink.Config{SecurityProtocol: "SASL_PLAINTEXT", SASLMechanism: "PLAIN"}, "⚠ Kafka verification (security.protocol): security.protocol=SASL_PLAINTEXT with sasl.mechanism=PLAIN: the password goes in clear text"},
		{sink.Config{SecurityProtocol: "SASL_SSL", SASLMechanism: "SCRAM-SHA-512", TLSSkipHostnameCheck: true}, "⚠ Kafka verification (ssl.endpoint.identification.algorithm)"},
		{sink.Config{SecurityProtocol: "SASL_SSL", SASLMechanism: "SCRAM-SHA-512"}, "✓ Kafka verification: security.protocol=SASL_SSL"},
	} {
		c := &checker{kafka: tc.cfg}
		c.kafkaVerification()
		var b bytes.Buffer
		if failed := Format(&b, c.results); failed != 0 || !strings.Contains(b.String(), tc.want) {
			t.Errorf("%+v: %d failed,\n%s\nwant a line starting %q", tc.cfg, failed, b.String(), tc.want)
		}
		if strings.HasPrefix(tc.want, "⚠") && !strings.Contains(b.String(), "fix: ") {
			t.Errorf("%+v: no fix:\n%s", tc.cfg, b.String())
		}
	}
}
