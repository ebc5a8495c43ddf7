package sink

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
)

// TestRealBrokerIdempotentOverSASL: on the bed's SCRAM-SHA-512 listener the
// idempotent producer's own InitProducerId connection authenticates as the
// Transport's do, and gets a producer id; with a wrong password the
// request fails with the authentication error, not retried.
func TestRealBrokerIdempotentOverSASL(t *testing.T) {
	brokers, user, password := testbed.KafkaSASL(t)
	for _, tc := range []struct {
		password string
		ok       bool
	}{{password, true}, {password + "-wrong", false}} {
		cfg := Config{Brokers: strings.Split(brokers, ","), SecurityProtocol: "SASL_PLAINTEXT", SASLMechanism: "SCRAM-SHA-512",
			SASLUsername: user, SASLPassword: tc.password, RequestTimeout: 10 * time.Second}
		p := newTestProducer(t, cfg)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		id, ok, err := p.IdempotentProducerID(ctx)
		cancel()
		if tc.ok && (err != nil || !ok || id < 0) {
			t.Fatalf("IdempotentProducerID over SCRAM: %d %v %v", id, ok, err)
		}
		if !tc.ok && (err == nil || !strings.Contains(err.Error(), "SASL")) {
			t.Fatalf("with a wrong password: %d %v; want the SASL error", id, err)
		}
	}
}
