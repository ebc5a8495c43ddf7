package consumer

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/outboxrelay/outboxrelay/router"
)

// Dead-letter headers. The names the relay's dead-letter topic also uses
// come from package router (Kafka Connect's __connect.errors.* names, so
// tooling written for Connect reads both); partition and offset are the
// names Connect gives them for a sink task.
const (
	HeaderDLQTopic          = router.HeaderDLQTopic          // original topic
	HeaderDLQPartition      = "__connect.errors.partition"   // original partition
	HeaderDLQOffset         = "__connect.errors.offset"      // original offset
	HeaderDLQConnectorName  = router.HeaderDLQConnectorName  // Config.Name
	HeaderDLQStage          = router.HeaderDLQStage          // "TASK_PUT", as for a sink task
	HeaderDLQExceptionClass = router.HeaderDLQExceptionClass // Go type of the innermost cause
	HeaderDLQExceptionMsg   = router.HeaderDLQExceptionMsg   // the error text
	HeaderDLQEventID        = router.HeaderDLQEventID        // the event id, when the message has one
	HeaderDLQAttempts       = "__outboxrelay.attempts"       // handler attempts made (0: not tried)
)

// deadLetterWriter returns the writer of Config.DeadLetterTopic, creating
// the topic when it is missing, or nil when none is configured.
func (c *Consumer) deadLetterWriter(ctx context.Context) (*kafka.Writer, error) {
	if c.cfg.DeadLetterTopic == "" {
		return nil, nil
	}
	transport := &kafka.Transport{}
	if d := c.cfg.Dialer; d != nil {
		transport.TLS, transport.SASL, transport.Dial = d.TLS, d.SASLMechanism, d.DialFunc
	}
	client := &kafka.Client{Addr: kafka.TCP(c.cfg.Brokers...), Transport: transport, Timeout: 10 * time.Second}
	res, err := client.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{
		{Topic: c.cfg.DeadLetterTopic, NumPartitions: 1, ReplicationFactor: -1},
	}})
	if err == nil {
		err = res.Errors[c.cfg.DeadLetterTopic]
	}
	if err != nil && !errors.Is(err, kafka.TopicAlreadyExists) {
		return nil, fmt.Errorf("consumer %s: creating the dead-letter topic %s (DeadLetterTopic): %w", c.cfg.Name, c.cfg.DeadLetterTopic, err)
	}
	return &kafka.Writer{
		Addr:         kafka.TCP(c.cfg.Brokers...),
		Topic:        c.cfg.DeadLetterTopic,
		Transport:    transport,
		Balancer:     &kafka.Murmur2Balancer{}, // Java's partitioner: one key, one partition
		RequiredAcks: kafka.RequireAll,
		BatchTimeout: time.Millisecond,
	}, nil
}

// deadLetter sends m to the dead-letter topic with headers saying why, or,
// without one, returns cause so that Run stops at m.
func (c *Consumer) deadLetter(ctx context.Context, w *kafka.Writer, m Message, cause error, attempts int) error {
	if w == nil {
		return cause
	}
	h := append([]kafka.Header(nil), m.Headers...)
	add := func(k, v string) { h = append(h, kafka.Header{Key: k, Value: []byte(v)}) }
	add(HeaderDLQTopic, m.Topic)
	add(HeaderDLQPartition, strconv.Itoa(m.Partition))
	add(HeaderDLQOffset, strconv.FormatInt(m.Offset, 10))
	add(HeaderDLQConnectorName, c.cfg.Name)
	add(HeaderDLQStage, "TASK_PUT")
	add(HeaderDLQExceptionClass, errorClass(cause))
	add(HeaderDLQExceptionMsg, cause.Error())
	if m.EventID != "" {
		add(HeaderDLQEventID, m.EventID)
	}
	add(HeaderDLQAttempts, strconv.Itoa(attempts))
	for attempt := 1; ; attempt++ {
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := w.WriteMessages(wctx, kafka.Message{Key: m.Key, Value: m.Value, Headers: h, Time: m.Time})
		cancel()
		if err == nil {
			break
		}
		if attempt >= c.cfg.MaxAttempts {
			return &stepError{"writing to the dead-letter topic " + c.cfg.DeadLetterTopic, fmt.Errorf("%w (the message failed with: %v)", err, cause)}
		}
		time.Sleep(c.cfg.backoff(attempt))
	}
	c.deadLettered.Add(1)
	spanDeadLettered(ctx, c.cfg.DeadLetterTopic, cause)
	c.cfg.Logger.Warn("consumer: message sent to the dead-letter topic", "consumer", c.cfg.Name, "dlq", c.cfg.DeadLetterTopic,
		"topic", m.Topic, "partition", m.Partition, "offset", m.Offset, "event_id", m.EventID, "err", cause)
	return nil
}

// errorClass names the innermost cause's Go type, as the relay's
// dead-letter headers do.
func errorClass(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			break
		}
		err = next
	}
	return reflect.TypeOf(err).String()
}
