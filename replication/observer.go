package replication

import (
	"time"

	"github.com/jackc/pglogrepl"
)

// Observer receives progress events for metrics, readiness and progress
// logs; cmd/outboxrelay wires one backed by Prometheus, so this package
// needs no metrics library. Options.Observer may be nil.
//
// Every method must be cheap (an atomic add or store: some run once per
// event) and safe for concurrent use: Published runs on the sink's
// goroutines, the others on the stream's.
type Observer interface {
	// Published: Kafka acknowledged one record of a row committed at
	// commitTime (zero for snapshot rows) with bytes of key and value.
	Published(topic string, bytes int, commitTime time.Time)
	// Skipped: a row or message was deliberately not published; reason is
	// one of a small fixed set (update, delete, truncate, other_table,
	// logical_message, routed_to_nothing).
	Skipped(reason string)
	// Received: the server's WAL end as of a keepalive or data message,
	// with what is confirmed at that moment.
	Received(confirmed, serverWALEnd pglogrepl.LSN)
	// Confirmed: a standby status update confirmed lsn to the server.
	Confirmed(lsn pglogrepl.LSN)
	// Pending: after each standby status update (at least every
	// status.update.interval.ms while streaming), the commit time of the
	// oldest transaction not yet confirmed; zero when there is none.
	Pending(oldest time.Time)
	// State: the relay entered a state: standby, connected, snapshot,
	// streaming, retrying or stopped. The replication package logs each
	// change once itself; observers need not.
	State(state string)
	// SnapshotProgress: rows emitted so far by the running initial
	// snapshot; done is true once, when all of them are acknowledged.
	SnapshotProgress(rows int64, done bool)
}

// States reported through Observer.State.
const (
	StateStandby   = "standby"   // another instance holds the failover lock
	StateConnected = "connected" // connected and preflight passed
	StateSnapshot  = "snapshot"  // reading the initial snapshot
	StateStreaming = "streaming" // START_REPLICATION sent
	StateRetrying  = "retrying"  // connection lost, waiting to reconnect
	StateStopped   = "stopped"   // Run is returning
)
