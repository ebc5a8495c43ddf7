package sink

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"

	kafka "github.com/segmentio/kafka-go"
)

// TestRetryableAndExplain: which failures the producer retries, and the
// config key each non-obvious one names.
func TestRetryableAndExplain(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("dial tcp 127.0.0.1:9093: %w", err) }
	cases := []struct {
		name      string
		err       error
		retryable bool
		hint      string // in explain's message; "" for none
	}{
		{"connection refused", wrap(&net.OpError{Op: "dial", Err: errors.New("connection refused")}), true, ""},
		{"unknown CA", wrap(&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}), false, KeyTruststoreLocation},
		{"wrong host", wrap(x509.HostnameError{Certificate: &x509.Certificate{}, Host: "kafka"}), false, KeyTruststoreLocation},
		{"plaintext listener", wrap(tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}), true, KeySecurityProtocol},
		{"closed by a TLS or SASL listener", wrap(io.EOF), true, KeySecurityProtocol},
		{"not leader", kafka.NotLeaderForPartition, true, ""},
		{"too large for the topic", kafka.MessageSizeTooLarge, false, "max.message.bytes"},
		{"SASL", kafka.SASLAuthenticationFailed, false, KeySASLJAASConfig},
		{"topic missing", ErrTopicMissing, false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := retryable(c.err); got != c.retryable {
				t.Errorf("retryable(%v) = %v, want %v", c.err, got, c.retryable)
			}
			msg := explain(c.err).Error()
			if c.hint == "" && msg != c.err.Error() {
				t.Errorf("explain added %q to %v; want nothing", strings.TrimPrefix(msg, c.err.Error()), c.err)
			}
			if c.hint != "" && !strings.Contains(msg, c.hint) {
				t.Errorf("explain(%v) = %q; want it to name %s", c.err, msg, c.hint)
			}
		})
	}
}
