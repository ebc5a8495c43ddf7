package relay

import (
	"time"

	"github.com/outboxrelay/outboxrelay/capture"
)

// Observer receives the relay's progress events for metrics, readiness and
// progress logs; cmd/outboxrelay wires one backed by Prometheus, so this
// package needs no metrics library. Options.Observer may be nil.
//
// Every method must be cheap (an atomic add or store: some run once per
// event) and safe for concurrent use: Published runs on the sink's
// goroutines, the others on the session's.
type Observer interface {
	// Published: Kafka acknowledged one record of a row committed at
	// commitTime (zero for snapshot rows) with bytes of key and value.
	Published(topic string, bytes int, commitTime time.Time)
	// Skipped: a row was deliberately not published; reason is update,
	// delete, routed_to_nothing or committed_in_kafka (covered by the
	// recorded position: invariant 11).
	Skipped(reason string)
	// DeadLettered: the poison policy dealt with a row (dead-lettered, or
	// skipped under errors.tolerance=all).
	DeadLettered()
	// SnapshotProgress: rows emitted so far by the running initial
	// snapshot; done is true once, when all of them are acknowledged.
	SnapshotProgress(rows int64, done bool)
	// State: the relay entered a state (capture.StateRetrying,
	// capture.StateStopped).
	State(state capture.State)
}

// TraceObserver is an Observer that also takes the trace of a traced
// record (Options.Tracing): for a sampled one, Published is called as
// PublishedTraced with the trace id instead, so that the commit-to-ack
// time can carry it as an exemplar.
type TraceObserver interface {
	PublishedTraced(topic string, bytes int, commitTime time.Time, traceID string)
}

// nopObserver is the Observer of Options without one.
type nopObserver struct{}

func (nopObserver) Published(string, int, time.Time) {}
func (nopObserver) Skipped(string)                   {}
func (nopObserver) DeadLettered()                    {}
func (nopObserver) SnapshotProgress(int64, bool)     {}
func (nopObserver) State(capture.State)              {}
