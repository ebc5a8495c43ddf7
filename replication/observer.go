package replication

import (
	"time"

	"github.com/outboxrelay/outboxrelay/capture"
)

// Observer receives progress events for metrics, readiness and progress
// logs of the PostgreSQL side; cmd/outboxrelay wires one backed by
// Prometheus, so this package needs no metrics library.
// SourceOptions.Observer may be nil.
//
// Every method must be cheap (an atomic add or store: some run once per
// event); all but Standby run on the stream's goroutine.
type Observer interface {
	// Skipped: a row or message was deliberately not yielded; reason is
	// one of truncate, other_table, logical_message.
	Skipped(reason string)
	// Received: the server's WAL end as of a keepalive or data message,
	// with what is confirmed at that moment.
	Received(confirmed, serverWALEnd capture.LSN)
	// Confirmed: a standby status update confirmed lsn to the server.
	Confirmed(lsn capture.LSN)
	// Pending: after each standby status update (at least every
	// status.update.interval.ms while streaming), the commit time of the
	// oldest transaction not yet confirmed; zero when there is none.
	Pending(oldest time.Time)
	// State: the source entered a state: capture.StateStandby (another
	// instance holds the failover lock), StateConnected (connected and
	// preflight passed), StateSnapshot or StateStreaming
	// (START_REPLICATION sent). The relay reports retrying and stopped.
	State(state capture.State)
	// Standby: a hot standby's replay and the slot's state, sampled when
	// a session on a standby opens (on the opening goroutine) and then
	// every StandbyPoll by the failover lock's watcher (its own
	// goroutine), on the lock's connection.
	Standby(r StandbyReplay)
}

// nopObserver is the Observer of a source given none.
type nopObserver struct{}

func (nopObserver) Skipped(string)            {}
func (nopObserver) Received(_, _ capture.LSN) {}
func (nopObserver) Confirmed(capture.LSN)     {}
func (nopObserver) Pending(time.Time)         {}
func (nopObserver) State(capture.State)       {}
func (nopObserver) Standby(StandbyReplay)     {}
