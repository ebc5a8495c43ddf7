package relay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/outboxrelay/outboxrelay/internal/terminal"
	"github.com/outboxrelay/outboxrelay/router"
)

// Converter rewrites a routed record's key and value before it is sent:
// the schema-registry converters (package registry) turn the router's
// JsonConverter {"schema":…,"payload":…} into the registry's wire format.
// The session's goroutine calls it, for records and heartbeats alike.
//
// Convert changes rec only when it succeeds. The bytes it sets follow the
// router's memory contract (Router.Route): they stay valid until the next
// Convert call, and the delivery copies them in Send. Its errors say what
// the relay does:
//   - a *ConvertError: the record is poison (errors.tolerance, the
//     dead-letter topic, which receives the record as the router wrote it);
//   - an error wrapping ErrConverterUnavailable: retried, with capped
//     backoff, while the source's server is kept informed; nothing moves
//     meanwhile, the slot included;
//   - any other error (terminal.Final: refused credentials) stops the relay.
type Converter interface {
	Convert(ctx context.Context, rec *router.Record) error
}

// ConvertError is a record the converter refused: its schema is
// incompatible with the subject's or invalid, or its payload does not fit
// its schema. The row is poison.
type ConvertError struct {
	// Stage is Kafka Connect's stage name for the dead-letter headers:
	// KEY_CONVERTER or VALUE_CONVERTER.
	Stage string
	Err   error
}

func (e *ConvertError) Error() string { return e.Err.Error() }
func (e *ConvertError) Unwrap() error { return e.Err }

// ErrConverterUnavailable marks a converter error that may pass: the
// schema registry down, or answering 5xx.
var ErrConverterUnavailable = errors.New("the converter's service is unavailable")

// Converter retry backoff: first and longest wait.
const (
	convertRetryFirst = 100 * time.Millisecond
	convertRetryMax   = 5 * time.Second
)

// convert runs the converter on rec, retrying while it is unavailable.
// It returns nil, a *ConvertError (poison) or an error that stops.
func (s *session) convert(ctx context.Context, ev *router.Event, rec *router.Record) error {
	wait := convertRetryFirst
	var since time.Time
	for attempt := 1; ; attempt++ {
		err := s.opt.Convert.Convert(ctx, rec)
		if err == nil || !errors.Is(err, ErrConverterUnavailable) {
			if err != nil && !isConvertError(err) && !terminal.IsFinal(err) && ctx.Err() == nil {
				err = terminal.Final(err)
			}
			if err != nil && ev != nil && !isConvertError(err) {
				err = fmt.Errorf("converting event %s (LSN %s, table %s) for %s: %w", rec.EventID, ev.CommitLSN, ev.Table(), rec.Topic, err)
			}
			return err
		}
		if since.IsZero() {
			since = time.Now()
		}
		if attempt == 1 || attempt%10 == 0 {
			s.log.Warn("relay: converter unavailable, retrying; nothing is confirmed meanwhile",
				"err", err, "attempt", attempt, "failing_since", since.Format(time.RFC3339), "topic", rec.Topic, "event_id", rec.EventID)
		}
		if err := s.pause(ctx, wait); err != nil {
			return err
		}
		wait = min(wait*2, convertRetryMax)
	}
}

func isConvertError(err error) bool {
	var ce *ConvertError
	return errors.As(err, &ce)
}

// pause waits d while keeping the source's server informed (as acquire
// does), so that a registry outage never looks like a dead client; it
// returns early with the checkpoint's error (a failed ack) or ctx's.
func (s *session) pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		if err := s.ck.Err(); err != nil {
			return err
		}
		if err := s.st.KeepAlive(ctx); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			return nil
		case <-tick.C:
		}
	}
}
