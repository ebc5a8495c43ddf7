package main

import (
	"sync/atomic"
	"time"

	"github.com/outboxrelay/outboxrelay/capture"
)

// kafkaFresh is how long a Kafka answer keeps the relay ready: a little
// more than five readiness pings (see pingKafka), so one lost ping does not
// flap /readyz.
const kafkaFresh = 30 * time.Second

// status is what the relay is doing and whether Kafka answers: what
// /readyz, the janitor and the progress log read. The observers write it
// (metrics.State as the source and the relay report their states;
// metrics.Produced and ProduceFailed, and pingKafka, as Kafka answers),
// so readiness never reads a metric back.
type status struct {
	state     atomic.Value // capture.State: the last one reported, "" before any
	kafkaOK   atomic.Int64 // unix nanos of the last Kafka success (ack or ping)
	kafkaFail atomic.Int64 // unix nanos of the last Kafka failure
}

func newStatus() *status {
	s := &status{}
	s.state.Store(capture.State(""))
	return s
}

// setState records st and returns the state it replaces.
func (s *status) setState(st capture.State) capture.State {
	return s.state.Swap(st).(capture.State)
}

// State is the last state reported; "" before any.
func (s *status) State() capture.State { return s.state.Load().(capture.State) }

// kafkaAnswered records the outcome of a produce request or a readiness
// ping: ok, or a failure.
func (s *status) kafkaAnswered(ok bool) {
	if !ok {
		s.kafkaFail.Store(time.Now().UnixNano())
		return
	}
	s.kafkaOK.Store(time.Now().UnixNano())
}

// ready is /readyz: streaming, and Kafka's latest answer (a produce or a
// ping) is a success less than kafkaFresh old. The string says why not.
func (s *status) ready(now time.Time) (bool, string) {
	if st := s.State(); st != capture.StateStreaming {
		if st == "" {
			st = "starting"
		}
		return false, "not streaming: " + string(st)
	}
	ok, fail := s.kafkaOK.Load(), s.kafkaFail.Load()
	switch {
	case ok == 0:
		return false, "Kafka has not answered yet"
	case fail > ok:
		return false, "Kafka's last answer was an error at " + time.Unix(0, fail).UTC().Format(time.RFC3339)
	case now.Sub(time.Unix(0, ok)) > kafkaFresh:
		return false, "Kafka has not answered since " + time.Unix(0, ok).UTC().Format(time.RFC3339)
	}
	return true, "streaming"
}
