// Package terminal marks errors with what they mean for the relay, where
// they arise, as CockroachDB's changefeeds mark terminal errors: a final
// error ends the relay (retrying cannot cure it: another instance took
// over, a config or an ACL to fix); a session error ends only the session,
// which the relay retries whatever the source would rule. relay.retryable
// asks these marks instead of listing other packages' sentinels.
//
// The outermost mark in an error's chain decides: a session error that
// wraps a final one (an aborted Kafka transaction, say, whose cause is a
// certificate) is retried.
package terminal

import "errors"

// mark is an error with its meaning for the relay.
type mark struct {
	err   error
	final bool
}

func (m *mark) Error() string { return m.err.Error() }
func (m *mark) Unwrap() error { return m.err }

// Final marks err as ending the relay; nil stays nil.
func Final(err error) error {
	if err == nil {
		return nil
	}
	return &mark{err: err, final: true}
}

// Session marks err as ending only the session: the relay opens the next
// one; nil stays nil.
func Session(err error) error {
	if err == nil {
		return nil
	}
	return &mark{err: err}
}

// IsFinal reports whether err's outermost mark is Final.
func IsFinal(err error) bool {
	var m *mark
	return errors.As(err, &m) && m.final
}

// IsSession reports whether err's outermost mark is Session.
func IsSession(err error) bool {
	var m *mark
	return errors.As(err, &m) && !m.final
}
