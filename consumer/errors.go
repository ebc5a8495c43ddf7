package consumer

import (
	"errors"
	"fmt"
)

// ErrNoEventID is the cause of a *MessageError (or of a dead letter) for a
// message without the event-id header, or with an empty one: without an id
// the message cannot be deduplicated, so it is never applied.
var ErrNoEventID = errors.New("the message has no event-id header")

// MessageError is what Run returns when it stops at a message: the
// handler failed Config.MaxAttempts times and no dead-letter topic is set,
// the message has no event id, or PostgreSQL or Kafka kept failing around
// it. The message's offset is not committed: a restart reads it again.
type MessageError struct {
	Consumer  string
	Topic     string
	Partition int
	Offset    int64
	EventID   string // empty when the message has none
	Attempts  int
	Err       error
}

func (e *MessageError) Error() string {
	id := e.EventID
	if id == "" {
		id = "none"
	}
	return fmt.Sprintf("consumer %s: message %s/%d at offset %d (event id %s) after %d attempt(s): %v",
		e.Consumer, e.Topic, e.Partition, e.Offset, id, e.Attempts, e.Err)
}

func (e *MessageError) Unwrap() error { return e.Err }

// stepError marks a failure of the consumer's own steps (begin, the
// processed_events insert, commit, offset commit) rather than of the
// handler: it is retried, but never dead-lettered, because the message is
// not at fault.
type stepError struct {
	step string
	err  error
}

func (e *stepError) Error() string { return e.step + ": " + e.err.Error() }
func (e *stepError) Unwrap() error { return e.err }
