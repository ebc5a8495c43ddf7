package sink

import (
	"time"

	"github.com/segmentio/kafka-go"
)

// Dialer returns a kafka-go Dialer with the same security as the producer's
// transport, for tools that read topics directly (outboxrelay verify).
func (c *Config) Dialer() (*kafka.Dialer, error) {
	t, err := c.transport()
	if err != nil {
		return nil, err
	}
	return c.dialer(t), nil
}

// dialer is a kafka-go Dialer with t's security.
func (c *Config) dialer(t *kafka.Transport) *kafka.Dialer {
	return &kafka.Dialer{Timeout: 10 * time.Second, DualStack: true, ClientID: c.ClientID, TLS: t.TLS, SASLMechanism: t.SASL}
}
