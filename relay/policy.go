package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/outboxrelay/outboxrelay/capture"
	"github.com/outboxrelay/outboxrelay/router"
)

// Poison decides what happens to a poison row: one the router rejects
// (rec is nil), or whose record the delivery refused before sending (rec is that
// record, the error wraps ErrRecordRejected), or the converter refused (rec
// is the router's record, the error a *ConvertError). Returning nil means the row
// was dealt with and ack will be called (dead-lettered, or skipped with ack
// called at once); returning an error stops the relay, having confirmed
// everything before the row (errors.tolerance=none).
type Poison func(ctx context.Context, ev *router.Event, rec *router.Record, cause error, ack func(error)) error

// DeadLetterer sends a copy of r to the dead-letter topic with error
// headers (router.HeaderDLQ*) saying where it came from and why; onAck
// reports Kafka's answer. The wiring gives the producer's.
type DeadLetterer interface {
	DeadLetter(ctx context.Context, r *router.Record, cause error, meta DeadLetterMeta, onAck func(error)) error
}

// DeadLetterMeta says where a dead-lettered row came from.
type DeadLetterMeta struct {
	LSN           string // of the row's commit, as PostgreSQL prints it (0/16B3748)
	SourceTable   string // "schema.table" of the outbox row
	ConnectorName string // the connector's "name"; omitted when empty
	// Stage is Connect's stage name: TRANSFORMATION for a routing
	// failure, KAFKA_PRODUCE for a record Kafka refused.
	Stage string
}

// NewPoisonPolicy returns what to do with a poison row, as Kafka Connect's
// errors.tolerance names it:
//
//   - none (default): nil, so the relay confirms everything before the row
//     and stops; a restart stops at the same row again, nothing skipped.
//   - all, with errors.deadletterqueue.topic.name: the row goes to the
//     dead-letter topic with Connect's __connect.errors.* headers plus its
//     LSN and table, and the relay goes on.
//   - all without a dead-letter topic: the row is logged at error level,
//     with everything needed to find it again, and skipped.
func NewPoisonPolicy(tolerance, connector string, dlq DeadLetterer, dlqTopic string, log *slog.Logger) (Poison, error) {
	if all, err := ParseTolerance(tolerance); !all {
		return nil, err
	}
	return func(ctx context.Context, ev *router.Event, rec *router.Record, cause error, ack func(error)) error {
		eventID := ""
		var rowErr *router.RowError
		if errors.As(cause, &rowErr) {
			eventID = rowErr.EventID
		}
		if rec != nil {
			eventID = rec.EventID
		}
		lsn, table := ev.CommitLSN, ev.Table()
		if dlqTopic == "" {
			log.Error("poison row skipped (errors.tolerance=all, no errors.deadletterqueue.topic.name)",
				"lsn", lsn.String(), "table", table, "event_id", eventID, "err", cause)
			ack(nil)
			return nil
		}
		stage := "TRANSFORMATION"
		var orig router.Record
		var convErr *ConvertError
		if rec != nil {
			stage = "KAFKA_PRODUCE"
			if errors.As(cause, &convErr) {
				stage = convErr.Stage
			}
			orig = router.Record{Topic: rec.Topic, Partition: -1, Key: rec.Key, Value: rec.Value, Headers: rec.Headers, EventID: rec.EventID}
		} else {
			// The router produced nothing: dead-letter the row itself, as a
			// JSON object of its columns' text, keyed by the event id, so
			// it can be repaired and replayed.
			orig = router.Record{Partition: -1, Key: []byte(eventID), Value: rowJSON(ev.Row), EventID: eventID}
		}
		log.Warn("poison row sent to the dead-letter topic", "topic", dlqTopic, "lsn", lsn.String(), "table", table, "event_id", eventID, "err", cause)
		return dlq.DeadLetter(ctx, &orig, cause, DeadLetterMeta{
			LSN: lsn.String(), SourceTable: table, ConnectorName: connector, Stage: stage,
		}, ack)
	}, nil
}

// ParseTolerance reads errors.tolerance: all is true for "all", false for
// "none" or unset; anything else is an error saying what to write.
func ParseTolerance(v string) (all bool, err error) {
	switch tol := strings.ToLower(strings.TrimSpace(v)); tol {
	case "", "none":
		return false, nil
	case "all":
		return true, nil
	default:
		return false, fmt.Errorf("errors.tolerance %q: use none (stop at a poison row, the default) or all (skip it, to errors.deadletterqueue.topic.name when set)", tol)
	}
}

// rowJSON renders a row as {"column": "text", …} with NULL as null, and a
// logical decoding message as such a row of two columns, prefix and content.
func rowJSON(row *capture.Row) []byte {
	b := []byte{'{'}
	if row.Op == capture.OpMessage {
		b = appendMember(b, router.MessagePrefixColumn, []byte(row.Prefix), false)
		b = append(b, ',')
		b = appendMember(b, router.MessageContentColumn, row.Content, false)
		return append(b, '}')
	}
	for i, c := range row.Columns {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendMember(b, c.Name, c.Text, c.Null || c.Unchanged)
	}
	return append(b, '}')
}

// appendMember appends `"name":"text"`, or `"name":null`.
func appendMember(b []byte, name string, text []byte, null bool) []byte {
	b = router.AppendJSONString(b, name)
	b = append(b, ':')
	if null {
		return append(b, "null"...)
	}
	return router.AppendJSONString(b, text)
}
