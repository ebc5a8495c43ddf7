package relay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/outboxrelay/outboxrelay/capture"
	"github.com/outboxrelay/outboxrelay/internal/terminal"
	"github.com/outboxrelay/outboxrelay/router"
)

// retry runs sessions until one ends the relay. Retry-or-stop is decided
// here, in retryable; the backoff restarts short after a session that
// confirmed progress.
func (r *relay) retry(ctx context.Context) error {
	var failingSince time.Time
	backoff := 500 * time.Millisecond
	for attempt := 1; ; attempt++ {
		started := time.Now()
		from := r.known.Confirmed
		err := r.runSession(ctx)
		if ctx.Err() != nil || errors.Is(err, capture.ErrEnd) {
			return nil
		}
		if !r.retryable(err) {
			return err
		}
		if max := r.opt.MaxRetries; max >= 0 && attempt > max {
			return fmt.Errorf("giving up after %d retries (errors.max.retries): %w", max, err)
		}
		// A session that confirmed progress was healthy: this failure
		// starts a new outage, with a short first wait. A session that
		// never got that far keeps backing off.
		if r.known.Confirmed > from {
			failingSince, backoff, attempt = time.Time{}, 500*time.Millisecond, 1
		}
		if failingSince.IsZero() {
			failingSince = started
		}
		r.state(capture.StateRetrying)
		r.opt.Log.Warn("relay: session failed, retrying",
			"err", err, "attempt", attempt, "failing_since", failingSince.Format(time.RFC3339), "backoff", backoff.String(),
			"resume_from", r.known.Confirmed.String())
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, r.opt.RetryWait)
	}
}

// retryable decides, in one place, whether an error ends the relay or only
// the session. Errors are marked where they arise (package
// internal/terminal): a final one (fenced by a newer instance, a Kafka
// transaction refused for good, an offsets topic that cannot be used, an
// unfinished Debezium snapshot, a certificate that does not verify) ends
// the relay; a session one (an aborted Kafka transaction: resume from the
// last committed position) is retried. The marks are asked before the
// source's rule, because kafka-go's error codes look like network errors.
// A poison row (also one the converter refused) and a record Kafka refused are final too (the delivery
// already retries transient Kafka errors forever). The source rules on the
// rest: network failures and server shutdowns are retried; configuration,
// permission and data errors are not.
func (r *relay) retryable(err error) bool {
	var rowErr *router.RowError
	switch {
	case terminal.IsFinal(err):
		return false
	case terminal.IsSession(err):
		return true
	case err == nil, errors.As(err, &rowErr), errors.Is(err, ErrRecordFailed), isConvertError(err):
		return false
	}
	return r.opt.Source.Retryable(err)
}
