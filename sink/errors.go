package sink

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"

	kafka "github.com/segmentio/kafka-go"

	"github.com/outboxrelay/outboxrelay/internal/certerr"
)

// Sentinel errors. Match them with errors.Is; record failures arrive wrapped
// in a *RecordError.
var (
	// ErrClosed: Send or DeadLetter after Close (returned by Send), or a
	// record still unacknowledged when Close ran (given to its onAck). Such a
	// record may or may not be in Kafka: the relay replays it after restart.
	ErrClosed = errors.New("sink: producer closed")
	// ErrRecordTooLarge: the record is bigger than max.request.size; Send
	// returns it before sending anything.
	ErrRecordTooLarge = errors.New("record larger than " + KeyMaxRequestSize)
	// ErrTopicMissing: the topic does not exist and nothing is configured to
	// create it. Given to onAck and returned by EnsureTopic.
	ErrTopicMissing = errors.New("topic does not exist")
	// ErrNoSuchPartition: the record names a partition the topic lacks.
	ErrNoSuchPartition = errors.New("partition does not exist")
	// ErrNoDeadLetterTopic: DeadLetter without errors.deadletterqueue.topic.name.
	ErrNoDeadLetterTopic = errors.New("sink: " + KeyDLQTopic + " is not set")
)

// RecordError is a record Kafka will not take however often it is retried
// (too large, bad topic, not authorized, ...). Returned by Send (a record
// over max.request.size: the relay's errors.tolerance decides, and may
// dead-letter it) or passed to the record's callback (the broker refused
// it: the relay stops before it, whatever errors.tolerance says).
type RecordError struct {
	Topic     string
	Partition int // -1 when the record was never routed
	EventID   string
	Err       error
}

func (e *RecordError) Error() string {
	where := fmt.Sprintf("topic %q", e.Topic)
	if e.Partition >= 0 {
		where += fmt.Sprintf(" partition %d", e.Partition)
	}
	return fmt.Sprintf("sink: event id %q to %s: %v", e.EventID, where, e.Err)
}

func (e *RecordError) Unwrap() error { return e.Err }

// retryable decides, in one place, whether a failed produce is tried again
// (forever, with backoff, holding back later records of the partition) or
// fails its records. The fatal list is the errors that cannot heal by
// waiting; anything else, including errors we do not recognise, is retried,
// because failing a record that a retry would have delivered stops the relay
// for nothing while retrying a truly stuck one only pauses it, loudly.
func retryable(err error) bool {
	if errors.Is(err, ErrClosed) || errors.Is(err, ErrTopicMissing) || errors.Is(err, ErrNoSuchPartition) || errors.Is(err, ErrRecordTooLarge) {
		return false
	}
	if certerr.Failed(err) {
		return false // it will not verify on the next try either
	}
	var ke kafka.Error
	if !errors.As(err, &ke) {
		return true // network, timeouts, unknown broker: wait and retry
	}
	switch ke {
	case kafka.InvalidReplicationFactor, kafka.InvalidPartitionNumber, kafka.InvalidConfiguration: // topic creation
		return false
	case kafka.MessageSizeTooLarge, // bigger than the topic's max.message.bytes
		kafka.RecordListTooLarge,
		kafka.InvalidTopic,
		kafka.InvalidRecord,
		kafka.InvalidTimestamp,
		kafka.InvalidRequiredAcks,
		kafka.UnsupportedForMessageFormat,
		kafka.UnsupportedCompressionType,
		kafka.UnsupportedVersion,
		kafka.PolicyViolation,
		kafka.TopicAuthorizationFailed,
		kafka.ClusterAuthorizationFailed,
		kafka.TransactionalIDAuthorizationFailed,
		kafka.SASLAuthenticationFailed,
		kafka.UnsupportedSASLMechanism,
		kafka.IllegalSASLState:
		return false
	}
	return true
}

// authFailure reports errors that mean the credentials are wrong, so the
// error can point at the config key instead of at one record.
func authFailure(err error) bool {
	var ke kafka.Error
	return errors.As(err, &ke) && (ke == kafka.SASLAuthenticationFailed || ke == kafka.UnsupportedSASLMechanism || ke == kafka.IllegalSASLState)
}

// explain adds the fix to errors whose cure is a config change.
func explain(err error) error {
	var ke kafka.Error
	var header tls.RecordHeaderError
	switch {
	case errors.Is(err, errIdempotenceRefused):
		return err // it names its fix
	case certerr.Failed(err):
		return fmt.Errorf("%w (check %s: the CA that signed the broker's certificate, and that bootstrap.servers names a host the certificate covers)", err, KeyTruststoreLocation)
	case errors.As(err, &header):
		return fmt.Errorf("%w (the listener does not speak TLS: check %s)", err, KeySecurityProtocol)
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w (the broker closed the connection: if it keeps doing so, does the listener expect TLS or SASL? check %s)", err, KeySecurityProtocol)
	case authFailure(err):
		return fmt.Errorf("%w (check %s and %s)", err, KeySASLMechanism, KeySASLJAASConfig)
	case errors.As(err, &ke) && ke == kafka.MessageSizeTooLarge:
		return fmt.Errorf("%w (the broker's message.max.bytes or the topic's max.message.bytes is smaller than the batch or record)", err)
	case errors.As(err, &ke) && (ke == kafka.TopicAuthorizationFailed || ke == kafka.ClusterAuthorizationFailed):
		return fmt.Errorf("%w (grant the user WRITE and DESCRIBE on the topic, CREATE to create it)", err)
	}
	return err
}
