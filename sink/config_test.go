package sink

import (
	"github.com/outboxrelay/outboxrelay/internal/config"

	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"
)

const jaas = `org.apache.kafka.common.security.scram.ScramLoginModule required username="relay" password="s3cr3t-pw";`

func TestParseConfigDefaults(t *testing.T) {
	c, err := ParseConfig(map[string]string{"bootstrap.servers": "k1:9092, k2:9092"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.Brokers, ",") != "k1:9092,k2:9092" || c.Linger != 5*time.Millisecond || c.MaxRequestSize != 1048576 ||
		c.SecurityProtocol != "PLAINTEXT" || c.ClientID != "outboxrelay" || !c.AllowAutoCreateTopics || c.createsTopics() ||
		c.DisableIdempotence {
		t.Fatalf("defaults: %+v", c)
	}
}

func TestParseConfigFull(t *testing.T) {
	c, err := ParseConfig(map[string]string{
		"bootstrap.servers": "k:9093", "acks": "-1", "linger.ms": "0", "batch.size": "65536",
		"compression.type": "zstd", "max.request.size": "2097152", "client.id": "me",
		"security.protocol": "sasl_ssl", "sasl.mechanism": "SCRAM-SHA-512", "sasl.jaas.config": jaas,
		"ssl.truststore.location": "/ca.pem", "ssl.truststore.type": "PEM",
		"topic.creation.default.partitions": "3", "topic.creation.default.replication.factor": "-1",
		"errors.deadletterqueue.topic.name": "dlq", "enable.idempotence": "false", "retries": "2147483647",
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.Linger <= 0 || c.Linger > time.Millisecond || c.BatchBytes != 65536 || c.Compression != kafka.Zstd ||
		c.SASLUsername != "relay" || c.SASLPassword != "s3cr3t-pw" || c.SASLMechanism != "SCRAM-SHA-512" ||
		c.TLSCAFile != "/ca.pem" || !c.createsTopics() || c.DeadLetterTopic != "dlq" || c.DeadLetterReplicationFactor != -1 ||
		!c.DisableIdempotence {
		t.Fatalf("parsed: %+v", c)
	}
}

// Each bad setting fails naming its key, and no error or log line carries
// the password.
func TestParseConfigErrors(t *testing.T) {
	base := func(kv ...string) map[string]string {
		m := map[string]string{"bootstrap.servers": "k:9092"}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		name string
		kv   map[string]string
		want []string
	}{
		{"no brokers", map[string]string{}, []string{"bootstrap.servers"}},
		{"acks=1", base("acks", "1"), []string{`acks "1"`, "set acks=all"}},
		{"acks=0", base("acks", "0"), []string{"acks"}},
		{"linger not a number", base("linger.ms", "soon"), []string{"linger.ms"}},
		{"batch.size", base("batch.size", "x"), []string{"batch.size"}},
		{"compression", base("compression.type", "brotli"), []string{"compression.type", "zstd"}},
		{"max.request.size", base("max.request.size", "-5"), []string{"max.request.size"}},
		{"request above buffer", base("max.request.size", "100000000"), []string{"max.request.size", "buffer.memory"}},
		{"protocol", base("security.protocol", "SSL_PLAIN"), []string{"security.protocol"}},
		{"gssapi", base("security.protocol", "SASL_SSL", "sasl.mechanism", "GSSAPI", "sasl.jaas.config", jaas), []string{"sasl.mechanism", "GSSAPI"}},
		{"oauth", base("security.protocol", "SASL_SSL", "sasl.mechanism", "OAUTHBEARER", "sasl.jaas.config", jaas), []string{"sasl.mechanism"}},
		{"sasl without jaas", base("security.protocol", "SASL_PLAINTEXT", "sasl.mechanism", "PLAIN"), []string{"sasl.jaas.config"}},
		{"jaas module", base("sasl.jaas.config", `com.sun.security.auth.module.Krb5LoginModule required password="s3cr3t-pw";`), []string{"sasl.jaas.config", "Krb5LoginModule"}},
		{"jaas no password", base("sasl.jaas.config", `org.apache.kafka.common.security.plain.PlainLoginModule required username="u";`), []string{"sasl.jaas.config"}},
		{"jks", base("ssl.truststore.type", "JKS", "ssl.truststore.location", "/x.jks"), []string{"ssl.truststore.type", "PEM"}},
		{"pkcs12 keystore", base("ssl.keystore.type", "PKCS12"), []string{"ssl.keystore.type"}},
		{"key password", base("ssl.key.password", "s3cr3t-pw"), []string{"ssl.key.password"}},
		{"partitions alone", base("topic.creation.default.partitions", "3"), []string{"topic.creation.default.partitions", "topic.creation.default.replication.factor"}},
		{"replication -2", base("topic.creation.default.partitions", "3", "topic.creation.default.replication.factor", "-2"), []string{"topic.creation.default.replication.factor"}},
		{"idempotence", base("enable.idempotence", "maybe"), []string{"enable.idempotence", "true or false"}},
		{"retries", base("retries", "3"), []string{"retries"}},
		{"auto create", base("allow.auto.create.topics", "maybe"), []string{"allow.auto.create.topics"}},
		{"endpoint identification", base("ssl.endpoint.identification.algorithm", "http"), []string{"ssl.endpoint.identification.algorithm"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig(tc.kv)
			if err == nil {
				t.Fatalf("no error for %v", tc.kv)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "s3cr3t-pw") {
				t.Errorf("error leaks the password: %q", err)
			}
		})
	}
}

func TestConfigNeverPrintsPassword(t *testing.T) {
	c, err := ParseConfig(map[string]string{"bootstrap.servers": "k:9092", "security.protocol": "SASL_PLAINTEXT",
		"sasl.mechanism": "SCRAM-SHA-256", "sasl.jaas.config": jaas})
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	slog.New(slog.NewJSONHandler(&sb, nil)).Info("config", "kafka", c)
	for _, s := range []string{c.String(), fmt.Sprint(c), fmt.Sprintf("%v %+v", c, c), sb.String()} {
		if strings.Contains(s, "s3cr3t-pw") {
			t.Errorf("password printed: %s", s)
		}
		if !strings.Contains(s, "relay") {
			t.Errorf("user missing from %s", s)
		}
	}
	// The SCRAM mechanism inside the transport prints no password either.
	tr, err := c.transport()
	if err != nil {
		t.Fatal(err)
	}
	if s := fmt.Sprintf("%v %+v", tr.SASL, tr.SASL); strings.Contains(s, "s3cr3t-pw") {
		t.Errorf("mechanism prints the password: %s", s)
	}
}

func TestKnownKey(t *testing.T) {
	if !KnownKey("linger.ms") || !KnownKey("sasl.jaas.config") || KnownKey("plugin.name") {
		t.Fatal("KnownKey")
	}
}

func TestTLSFilesErrorsNameKey(t *testing.T) {
	c, err := ParseConfig(map[string]string{"bootstrap.servers": "k:9093", "security.protocol": "SSL", "ssl.ca.location": "/nonexistent/ca.pem"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewProducer(c, nil)
	if err == nil || !strings.Contains(err.Error(), "ssl.truststore.location") {
		t.Fatalf("NewProducer with a missing CA file: %v", err)
	}
}

// Regression (issue 27, item 6): the sink and the scrubber parsed
// sasl.jaas.config with two expressions that read an escaped quote
// differently, so the password the sink sent was not the one scrubbed from
// the logs. Both now read it with config.JAASOption.
func TestJAASPasswordIsTheScrubbedOne(t *testing.T) {
	for _, v := range []string{
		`org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p\"w;x";`,
		`org.apache.kafka.common.security.plain.PlainLoginModule required username=u password=pw\x;`,
		`org.apache.kafka.common.security.scram.ScramLoginModule required password="a\\b" username="u";`,
	} {
		_, pw, err := parseJAAS(v)
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		if want := config.JAASOption(v, "password"); pw != want || pw == "" {
			t.Errorf("%s: the sink reads password %q, the scrubber %q", v, pw, want)
		}
	}
}

// Regression (issue 27, item 10): acks=ALL passed the file's key check
// (any case) and was then refused by the sink, which compared with "all".
// It reads acks through its declaration now: all, -1, in any case.
func TestAcksAnyCase(t *testing.T) {
	for _, v := range []string{"all", "ALL", "-1", "All"} {
		if _, err := ParseConfig(map[string]string{"bootstrap.servers": "k:9092", "acks": v}); err != nil {
			t.Errorf("acks=%s: %v", v, err)
		}
	}
}
