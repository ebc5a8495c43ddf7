package capture

// State is what the relay is doing, as a source and the relay report it to
// their observers (replication.Observer, poll.Observer, relay.Observer)
// and as /readyz, the janitor and the outboxrelay_state metric read it.
type State string

// The states. A source reports standby, connected, snapshot and
// streaming; the relay reports retrying and stopped.
const (
	StateStandby   State = "standby"   // another instance holds the failover lock (logical replication), or no poll bucket is held
	StateConnected State = "connected" // connected and preflight passed
	StateSnapshot  State = "snapshot"  // reading the initial snapshot
	StateStreaming State = "streaming" // capturing: START_REPLICATION sent, or polling
	StateRetrying  State = "retrying"  // a session failed, waiting to open the next
	StateStopped   State = "stopped"   // relay.Run is returning
)

// States lists every state, for an observer that shows them all.
func States() []State {
	return []State{StateStandby, StateConnected, StateSnapshot, StateStreaming, StateRetrying, StateStopped}
}
