package relay

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pglogrepl"
)

// PositionStore keeps the confirmed position outside the database (the
// offsets topic, see sink.Offsets), where it survives a failover that the
// slot may not. It lets a source refuse to replace a slot that is gone
// while events were delivered from it (invariant 9).
type PositionStore interface {
	// Load returns the recorded position; found is false on a first start.
	Load(ctx context.Context) (pos pglogrepl.LSN, found bool, err error)
	// Save records pos; ack reports Kafka's answer.
	Save(ctx context.Context, pos pglogrepl.LSN, ack func(error)) error
	// Where and Forget say, for messages, where the position is kept and
	// how to delete it.
	Where() string
	Forget() string
}

// loadPosition reads the recorded position before every session, once
// the source may stream: a standby that takes over reads what the active
// instance recorded.
func (r *relay) loadPosition(ctx context.Context) error {
	store := r.opt.Positions
	if store == nil {
		return nil
	}
	pos, found, err := store.Load(ctx)
	if err != nil {
		return fmt.Errorf("reading the recorded position from %s: %w", store.Where(), err)
	}
	r.known.RecordedIn, r.known.Forget = store.Where(), store.Forget()
	_, r.known.Skips = r.opt.Sink.(Transactional)
	if found && pos != r.known.Recorded {
		r.known.Recorded = pos
		r.opt.Log.Info("recorded position", "lsn", pos.String(), "in", store.Where())
	}
	return nil
}

// recorder saves the session's confirmed position every interval while it
// moves, and once more when stopped; each save is asynchronous, in order.
type recorder struct {
	store PositionStore
	ck    *Checkpoint
	log   interface{ Warn(string, ...any) }
	mu    sync.Mutex
	saved pglogrepl.LSN // last position handed to the store
	// failed is the first position Kafka refused for good: without it a
	// lost slot would go unnoticed, so the session stops (Err).
	failed error
}

// Err returns the failure that stops the session, if any.
func (rc *recorder) Err() error {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.failed
}

func (rc *recorder) fail(pos pglogrepl.LSN, err error) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.failed == nil {
		rc.failed = fmt.Errorf("%w: recording the confirmed position %s in %s: %w", ErrRecordFailed, pos, rc.store.Where(), err)
	}
}

// run saves every interval until ctx ends.
func (rc *recorder) run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			rc.save(ctx)
		}
	}
}

// save hands the confirmed position to the store when it moved.
func (rc *recorder) save(ctx context.Context) {
	pos := rc.ck.Confirmed()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if pos <= rc.saved {
		return
	}
	// The sink retries transient errors itself: an error here is final.
	err := rc.store.Save(ctx, pos, func(err error) {
		if err != nil {
			rc.fail(pos, err)
		}
	})
	if err != nil && ctx.Err() == nil {
		rc.failed = fmt.Errorf("%w: recording the confirmed position %s in %s: %w", ErrRecordFailed, pos, rc.store.Where(), err)
		return
	}
	rc.saved = pos
}
