package sink

import (
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/outboxrelay/outboxrelay/router"
)

// Record is one Kafka record to send: the router's, so that a routed
// record reaches the producer as it is, without a copy. Partition -1 lets
// the producer pick (Java's murmur2 of the key, or any partition for a
// null key); nil Key or Value is null (a null value is a tombstone), an
// empty non-nil slice an empty byte string; a zero Timestamp is the time
// Send was called.
type Record = router.Record

// Header is one record header (router.Header). A nil Value is a null
// header value.
type Header = router.Header

// pending is a record owned by the producer from Send until its
// acknowledgement. Its bytes live in one allocation, so a caller may reuse
// its buffers as soon as Send returns.
type pending struct {
	topic     string
	partition int // -1 until routed
	key       []byte
	value     []byte
	headers   []kafka.Header
	time      time.Time
	eventID   string
	size      int // recordSize: bytes inside a batch, at most
	onAck     func(error)
	queued    time.Duration // when it entered its partition queue (Producer.since), for linger.ms
}

// newPending copies r into memory the producer owns: all key, value and
// header bytes share one buffer.
func newPending(r Record, size int, onAck func(error)) *pending {
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
	p := &pending{
		topic:     r.Topic,
		partition: r.Partition,
		key:       take(r.Key),
		value:     take(r.Value),
		time:      r.Timestamp,
		eventID:   r.EventID,
		size:      size,
		onAck:     onAck,
	}
	if len(r.Headers) > 0 {
		p.headers = make([]kafka.Header, len(r.Headers))
		for i, h := range r.Headers {
			p.headers[i] = kafka.Header{Key: h.Key, Value: take(h.Value)}
		}
	}
	if p.time.IsZero() {
		p.time = time.Now()
	}
	return p
}

// Record-batch framing (Kafka message format v2), used to bound sizes the
// way Java's producer does before it sends.
const (
	batchOverhead = 61 // record batch header
	// Per record: length, attributes, timestamp delta, offset delta,
	// key/value lengths and header count, as varints at their largest.
	recordOverhead = 5 + 1 + 10 + 5 + 5 + 5 + 5
)

// recordSize is an upper bound of the bytes r takes inside a record batch.
// Plus batchOverhead it is what Java's estimateSizeInBytesUpperBound
// compares with max.request.size before sending.
func recordSize(r Record) int {
	n := recordOverhead + len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += 5 + len(h.Key) + 5 + len(h.Value)
	}
	return n
}
