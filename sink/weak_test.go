package sink

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Regression (issue 27, item 5): ssl.truststore.location=/dev/zero (or a
// FIFO, or a huge file) was read with os.ReadFile: the relay ran out of
// memory, or blocked for ever at start-up. Each TLS file is now a regular
// file of at most 1 MiB, and the error names the key and the file.
func TestKafkaTLSFilesBounded(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.pem")
	if err := os.WriteFile(big, make([]byte, maxTLSFile+1), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cfg  Config
		want []string
	}{
		{"truststore /dev/zero", Config{TLSCAFile: "/dev/zero"}, []string{KeyTruststoreLocation, "/dev/zero", "not a regular file"}},
		{"truststore fifo", Config{TLSCAFile: fifo}, []string{KeyTruststoreLocation, fifo, "not a regular file"}},
		{"truststore too large", Config{TLSCAFile: big}, []string{KeyTruststoreLocation, big}},
		{"certificate /dev/zero", Config{TLSCertFile: "/dev/zero", TLSKeyFile: "/dev/zero"}, []string{KeyCertificateLocation, "/dev/zero", "not a regular file"}},
		{"key fifo", Config{TLSCertFile: writeFile(t, dir, "c.pem", "x"), TLSKeyFile: fifo}, []string{KeyKeyLocation, fifo, "not a regular file"}},
		{"certificate without key", Config{TLSCertFile: big}, []string{KeyCertificateLocation, KeyKeyLocation, "set both"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.cfg.tlsConfig()
			if err == nil {
				t.Fatal("tlsConfig: no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Regression (issue 27, item 7): a weakened Kafka verification (no TLS,
// PLAIN over SASL_PLAINTEXT, the brokers' host name not checked) logged
// nothing and check passed it. Weaknesses lists each, with the key and a
// fix; the relay WARNs them at start-up and check shows them as ⚠.
func TestKafkaWeaknesses(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want []string // one substring of each weakness's Detail, in order
	}{
		{"plaintext", Config{SecurityProtocol: "PLAINTEXT"}, []string{"no TLS and no authentication"}},
		{"default is plaintext", Config{}, []string{"no TLS and no authentication"}},
		{"SASL PLAIN in clear", Config{SecurityProtocol: "SASL_PLAINTEXT", SASLMechanism: "PLAIN"}, []string{"the password goes in clear text"}},
		{"SCRAM in clear", Config{SecurityProtocol: "SASL_PLAINTEXT", SASLMechanism: "SCRAM-SHA-512"}, []string{"offline guess"}},
		{"host name off", Config{SecurityProtocol: "SASL_SSL", SASLMechanism: "SCRAM-SHA-512", TLSCAFile: "ca.pem", TLSSkipHostnameCheck: true}, []string{"that CA is accepted"}},
		{"host name off, system roots", Config{SecurityProtocol: "SSL", TLSSkipHostnameCheck: true}, []string{"any public CA"}},
		{"verified", Config{SecurityProtocol: "SASL_SSL", SASLMechanism: "SCRAM-SHA-512", TLSCAFile: "ca.pem"}, nil},
		{"TLS with system roots", Config{SecurityProtocol: "SSL"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := tc.cfg.Weaknesses()
			if len(ws) != len(tc.want) {
				t.Fatalf("Weaknesses = %+v; want %d", ws, len(tc.want))
			}
			for i, w := range ws {
				if !strings.Contains(w.Detail, tc.want[i]) || w.Key == "" || w.Fix == "" {
					t.Errorf("weakness %+v; want a key, a fix and %q", w, tc.want[i])
				}
			}
		})
	}
}
