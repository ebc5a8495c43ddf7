package sink

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"

	kafka "github.com/segmentio/kafka-go"
)

// Observer receives the outcome of every produce request, for metrics and
// readiness; cmd/outboxrelay wires one backed by Prometheus, so this package
// needs no metrics library. Methods run on the partition goroutines: they
// must be cheap and safe for concurrent use.
type Observer interface {
	// Produced: the brokers acknowledged (acks=all) a batch of records
	// holding bytes of keys, values and headers.
	Produced(records, bytes int)
	// ProduceFailed: a produce request failed. kind is a short, bounded
	// label (see ErrorKind); retrying says whether the batch will be tried
	// again or its records fail.
	ProduceFailed(kind string, retrying bool)
}

// SetObserver sets the observer of produce outcomes (nil: nobody
// watches). Call it before the first Send: the partition goroutines
// started by Send read it unlocked.
func (p *Producer) SetObserver(o Observer) {
	if o == nil {
		o = nopObserver{}
	}
	p.obs = o
}

// nopObserver is the Observer of a producer nobody watches.
type nopObserver struct{}

func (nopObserver) Produced(int, int)          {}
func (nopObserver) ProduceFailed(string, bool) {}

func (p *Producer) observeProduced(batch []*pending) {
	bytes := 0
	for _, pe := range batch {
		bytes += pe.Size
	}
	p.obs.Produced(len(batch), bytes)
}

func (p *Producer) observeFailed(err error, retrying bool) {
	if !errors.Is(err, ErrClosed) {
		p.obs.ProduceFailed(ErrorKind(err), retrying)
	}
}

// ErrorKind names an error in a few words suitable as a metric label: the
// Kafka error code's name in snake case (not_leader_for_partition,
// message_size_too_large, ...), or timeout, network, closed, other.
func ErrorKind(err error) string {
	var ke kafka.Error
	var ne net.Error
	switch {
	case errors.As(err, &ke):
		return strings.ReplaceAll(strings.ToLower(ke.Title()), " ", "_")
	case errors.Is(err, ErrClosed):
		return "closed"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.As(err, &ne), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
		return "network"
	}
	return "other"
}
