package sink

import (
	"context"
	"sync"
)

// budget counts the records and bytes accepted by Send and not yet
// acknowledged. Send waits while it is full (buffer.memory), Flush waits for
// it to empty. Waiters block on a channel that releases close, so each wait
// can also select on a context.
type budget struct {
	mu      sync.Mutex
	limit   int64
	bytes   int64
	records int
	// changed is closed and replaced by a release while anyone waits, so
	// releases cost no allocation when nobody does.
	changed chan struct{}
	waiters int
}

func newBudget(limit int64) *budget {
	return &budget{limit: limit, changed: make(chan struct{})}
}

// acquire takes n bytes for one record. A record larger than the whole
// budget still gets in when nothing else is buffered, so it can never wait
// forever.
func (b *budget) acquire(ctx, closing context.Context, n int64) error {
	return b.await(ctx, closing, func() bool {
		if b.records > 0 && b.bytes+n > b.limit {
			return false
		}
		b.bytes += n
		b.records++
		return true
	})
}

// release gives back one record and its n bytes.
func (b *budget) release(n int64) {
	b.mu.Lock()
	b.bytes -= n
	b.records--
	b.notifyLocked()
	b.mu.Unlock()
}

// releaseBytes gives back a record's n bytes before its callback runs, so
// a caller whose own limit equals buffer.memory finds room as soon as it
// has seen the acknowledgement; releaseRecord, after the callback, lets
// Flush return.
func (b *budget) releaseBytes(n int64) {
	b.mu.Lock()
	b.bytes -= n
	b.notifyLocked()
	b.mu.Unlock()
}

func (b *budget) releaseRecord() {
	b.mu.Lock()
	b.records--
	b.notifyLocked()
	b.mu.Unlock()
}

func (b *budget) notifyLocked() {
	if b.waiters > 0 {
		close(b.changed)
		b.changed = make(chan struct{})
	}
}

// waitEmpty returns once every acquired record has been released.
func (b *budget) waitEmpty(ctx context.Context) error {
	return b.await(ctx, context.Background(), func() bool { return b.records == 0 })
}

// await calls try under the lock until it returns true, waiting for a
// release between calls.
func (b *budget) await(ctx, closing context.Context, try func() bool) error {
	for {
		b.mu.Lock()
		if try() {
			b.mu.Unlock()
			return nil
		}
		ch := b.changed
		b.waiters++
		b.mu.Unlock()
		var err error
		select {
		case <-ch:
		case <-ctx.Done():
			err = ctx.Err()
		case <-closing.Done():
			err = ErrClosed
		}
		b.mu.Lock()
		b.waiters--
		b.mu.Unlock()
		if err != nil {
			return err
		}
	}
}

func (b *budget) inFlight() (records int, bytes int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.records, b.bytes
}
