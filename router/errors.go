package router

import (
	"fmt"
	"strings"

	"github.com/outboxrelay/outboxrelay/capture"
)

// RowError reports an outbox row the router cannot turn into a record: a
// poison row. Route returns it as *RowError. The relay stops on it, or sends
// the row to the dead-letter topic when one is configured and Fatal is false.
type RowError struct {
	LSN      capture.LSN // commit LSN of the row's transaction
	Position int         // the row's place in its transaction, from 1 (capture.Row.Position)
	Table    string      // "schema.table", or MessageTable(prefix) for a message
	EventID  string      // text of the event-id column; empty when it is unknown
	// Column is the column at fault; ConfigKey is the option that names it
	// (for example transforms.outbox.route.by.field).
	Column    string
	ConfigKey string
	// Reason says what is wrong and what to do about it.
	Reason string
	// Fatal is set when the configuration asks to stop on this row
	// (table.op.invalid.behavior=fatal): such a row must not go to a
	// dead-letter topic.
	Fatal bool
}

func (e *RowError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "routing row at LSN %s", e.LSN)
	if e.Table != "" {
		fmt.Fprintf(&b, " of %s", e.Table)
	}
	if e.EventID != "" {
		fmt.Fprintf(&b, " (event id %s)", e.EventID)
	} else {
		b.WriteString(" (event id unknown)")
	}
	if e.Column != "" {
		fmt.Fprintf(&b, ": column %q", e.Column)
	}
	if e.ConfigKey != "" {
		fmt.Fprintf(&b, " (from %s)", e.ConfigKey)
	}
	b.WriteString(": ")
	b.WriteString(e.Reason)
	return b.String()
}

// ConfigError reports a configuration value the router cannot run with.
// Reason says what to write instead.
type ConfigError struct {
	Key    string
	Reason string
}

func (e *ConfigError) Error() string {
	return "router config: " + e.Key + ": " + e.Reason
}

// maxTopicLength is Kafka's limit on topic names (Topic.MAX_NAME_LENGTH).
const maxTopicLength = 249

// CheckTopicName reports whether name is a legal Kafka topic name: 1 to 249
// characters from [a-zA-Z0-9._-], and neither "." nor "..". A bad name is
// rejected before producing, because the broker's answer would not say which
// row or route value caused it.
func CheckTopicName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("topic name is empty")
	case name == "." || name == "..":
		return fmt.Errorf("topic name %q is not allowed", name)
	case len(name) > maxTopicLength:
		return fmt.Errorf("topic name %.40q… is %d characters long, the limit is %d", name, len(name), maxTopicLength)
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !topicChar(c) {
			return fmt.Errorf("topic name %q has the byte %q at offset %d; legal characters are a-z, A-Z, 0-9, '.', '_' and '-'", name, c, i)
		}
	}
	return nil
}

func topicChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}
