package sink

import (
	"fmt"
	"time"

	"github.com/outboxrelay/outboxrelay/internal/kafkabatch"
	"github.com/outboxrelay/outboxrelay/router"
)

// pending is a record owned by the producer from Send until its
// acknowledgement (kafkabatch.Pending: its bytes in one allocation, so a
// caller may reuse its buffers as soon as Send returns), with when it
// entered its partition queue.
type pending struct {
	kafkabatch.Pending
	queued time.Duration // when it entered its partition queue (Producer.since), for linger.ms
}

// newPending copies r into memory the producer owns.
func newPending(r router.Record, size int, onAck func(error)) *pending {
	return &pending{Pending: kafkabatch.Take(r, size, onAck)}
}

// SizeOf is the bytes r takes inside a record batch, at most
// (kafkabatch.RecordSize), or a *RecordError wrapping ErrRecordTooLarge
// when r alone, in a batch, exceeds maxRequestSize (max.request.size): as
// Java's producer, both sinks refuse such a record before sending.
func SizeOf(r router.Record, maxRequestSize int) (int, error) {
	size := kafkabatch.RecordSize(r)
	if size+kafkabatch.BatchOverhead > maxRequestSize {
		return 0, &RecordError{Topic: r.Topic, Partition: r.Partition, EventID: r.EventID,
			Err: fmt.Errorf("%w: %d bytes serialized (at most), %s is %d; raise %s (and the topic's max.message.bytes) or send a smaller payload",
				ErrRecordTooLarge, size+kafkabatch.BatchOverhead, KeyMaxRequestSize, maxRequestSize, KeyMaxRequestSize)}
	}
	return size, nil
}
