package kafkabatch

import (
	"time"

	"github.com/outboxrelay/outboxrelay/router"
)

// Pending is a routed record a producer owns from Send until its
// acknowledgement: both sinks' producers (sink.Producer and the
// exactly-once sink's worker) batch these. Its bytes live in one
// allocation (Take), so a caller may reuse its buffers as soon as Send
// returns.
type Pending struct {
	Topic     string
	Partition int // -1 until routed
	Key       []byte
	Value     []byte
	Headers   []Header
	Time      time.Time
	EventID   string
	Size      int // RecordSize: bytes inside a batch, at most
	OnAck     func(error)
	Placed    func(partition int, offset int64) // router.Record.Placed; nil: nobody asks
}

// Take copies r into memory the producer owns: all key, value and header
// bytes share one buffer. A zero Timestamp becomes the time of the call.
// It returns a value, so that a producer's own record type may embed it
// without a second allocation.
func Take(r router.Record, size int, onAck func(error)) Pending {
	n := len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += len(h.Value)
	}
	buf := make([]byte, 0, n)
	take := func(b []byte) []byte {
		if b == nil {
			return nil
		}
		start := len(buf)
		buf = append(buf, b...)
		return buf[start:len(buf):len(buf)]
	}
	p := Pending{
		Topic:     r.Topic,
		Partition: r.Partition,
		Key:       take(r.Key),
		Value:     take(r.Value),
		Time:      r.Timestamp,
		EventID:   r.EventID,
		Size:      size,
		OnAck:     onAck,
		Placed:    r.Placed,
	}
	if len(r.Headers) > 0 {
		p.Headers = make([]Header, len(r.Headers))
		for i, h := range r.Headers {
			p.Headers[i] = Header{Key: h.Key, Value: take(h.Value)}
		}
	}
	if p.Time.IsZero() {
		p.Time = time.Now()
	}
	return p
}

// Message is p for the batch encoder.
func (p *Pending) Message() Message {
	return Message{Key: p.Key, Value: p.Value, Headers: p.Headers, Timestamp: p.Time.UnixMilli()}
}

// Record-batch framing (message format v2), used to bound sizes the way
// Java's producer does before it sends.
const (
	// BatchOverhead is a record batch's header.
	BatchOverhead = 61
	// Per record: length, attributes, timestamp delta, offset delta,
	// key/value lengths and header count, as varints at their largest.
	recordOverhead = 5 + 1 + 10 + 5 + 5 + 5 + 5
)

// RecordSize is an upper bound of the bytes r takes inside a record
// batch. Plus BatchOverhead it is what Java's
// estimateSizeInBytesUpperBound compares with max.request.size before
// sending.
func RecordSize(r router.Record) int {
	n := recordOverhead + len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += 5 + len(h.Key) + 5 + len(h.Value)
	}
	return n
}
