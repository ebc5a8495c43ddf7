package relay

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Budget bounds the work in flight between PostgreSQL and Kafka, in records
// and in bytes (invariant 5). The stream goroutine acquires a record's share
// before handing it to the sink and the sink's acknowledgement releases it.
// While Kafka is slow or down, Acquire blocks, the stream stops reading, the
// server stops sending and WAL waits in the slot rather than in memory.
//
// Acquire is meant for one goroutine (the stream); Release may be called
// from any goroutine.
type Budget struct {
	maxRecords int
	maxBytes   int64

	mu      sync.Mutex
	records int
	bytes   int64
	wake    chan struct{} // made by a waiting Acquire, closed by the next Release
}

// NewBudget returns a budget of maxRecords records and maxBytes bytes; both
// must be positive, since a zero bound would block the first record forever.
func NewBudget(maxRecords int, maxBytes int64) (*Budget, error) {
	if maxRecords <= 0 || maxBytes <= 0 {
		return nil, fmt.Errorf("in-flight budget: records (%d) and bytes (%d) must be positive", maxRecords, maxBytes)
	}
	return &Budget{maxRecords: maxRecords, maxBytes: maxBytes}, nil
}

// Acquire takes records records of bytes bytes in all from the budget,
// waiting for releases while they do not fit. It returns true once taken; false with a
// nil error when wait elapsed first, so that the caller can send a standby
// status update (or answer a keepalive) and call again; false with the
// context's error when ctx ends.
//
// A request larger than the whole budget is let through when nothing else
// is in flight: refusing it would stop the relay forever, and letting it
// through alone keeps memory at that one request.
func (b *Budget) Acquire(ctx context.Context, records int, bytes int64, wait time.Duration) (bool, error) {
	var timer *time.Timer
	for {
		wake := b.tryAcquire(records, bytes)
		if wake == nil {
			return true, nil
		}
		if timer == nil {
			timer = time.NewTimer(wait)
			defer timer.Stop()
		}
		select {
		case <-wake:
		case <-timer.C:
			return false, nil
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}

// tryAcquire takes the share and returns nil, or returns the channel that
// the next Release closes.
func (b *Budget) tryAcquire(records int, bytes int64) <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	fits := b.records+records <= b.maxRecords && b.bytes+bytes <= b.maxBytes
	if fits || b.records == 0 {
		b.records += records
		b.bytes += bytes
		return nil
	}
	if b.wake == nil {
		b.wake = make(chan struct{})
	}
	return b.wake
}

// Release returns records and bytes acquired earlier to the budget.
func (b *Budget) Release(records int, bytes int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.records -= records
	b.bytes -= bytes
	if b.wake != nil {
		close(b.wake)
		b.wake = nil
	}
}

// InFlight returns the records and bytes currently acquired.
func (b *Budget) InFlight() (records int, bytes int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.records, b.bytes
}
