package relay

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func newTestBudget(t *testing.T, records int, bytes int64) *Budget {
	t.Helper()
	b, err := NewBudget(records, bytes)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func acquire(t *testing.T, b *Budget, records int, bytes int64, wait time.Duration) bool {
	t.Helper()
	ok, err := b.Acquire(context.Background(), records, bytes, wait)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

func TestBudgetBoundsRecordsAndBytes(t *testing.T) {
	b := newTestBudget(t, 2, 100)
	if !acquire(t, b, 1, 60, time.Millisecond) || !acquire(t, b, 1, 40, time.Millisecond) {
		t.Fatal("records within the budget were refused")
	}
	if acquire(t, b, 1, 0, 10*time.Millisecond) {
		t.Error("a third record was let in with a budget of two")
	}
	b.Release(1, 60)
	if acquire(t, b, 1, 61, 10*time.Millisecond) {
		t.Error("61 bytes let in with 40 of 100 in flight")
	}
	if !acquire(t, b, 1, 60, time.Millisecond) {
		t.Error("60 bytes refused with 40 of 100 in flight")
	}
	if r, n := b.InFlight(); r != 2 || n != 100 {
		t.Errorf("InFlight() = %d, %d; want 2, 100", r, n)
	}
}

// A record larger than the whole byte budget must not wait forever.
func TestBudgetOversizedRecordPassesAlone(t *testing.T) {
	b := newTestBudget(t, 10, 100)
	if !acquire(t, b, 1, 1000, time.Millisecond) {
		t.Fatal("an oversized record was refused with nothing in flight")
	}
	if acquire(t, b, 1, 1, 10*time.Millisecond) {
		t.Error("a record was let in next to an oversized one")
	}
	b.Release(1, 1000)
	if !acquire(t, b, 1, 1, time.Millisecond) {
		t.Error("refused after the oversized record was released")
	}
}

func TestBudgetReleaseWakesWaiter(t *testing.T) {
	b := newTestBudget(t, 1, 100)
	acquire(t, b, 1, 10, time.Millisecond)
	time.AfterFunc(20*time.Millisecond, func() { b.Release(1, 10) })
	start := time.Now()
	if !acquire(t, b, 1, 10, 10*time.Second) {
		t.Fatal("the waiter was not let in after the release")
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Errorf("waited %v: the release did not wake the waiter", waited)
	}
}

func TestBudgetContextCancel(t *testing.T) {
	b := newTestBudget(t, 1, 100)
	acquire(t, b, 1, 10, time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(10*time.Millisecond, cancel)
	ok, err := b.Acquire(ctx, 1, 10, time.Minute)
	if ok || !errors.Is(err, context.Canceled) {
		t.Errorf("Acquire after cancel = %v, %v; want false, context.Canceled", ok, err)
	}
}

func TestNewBudgetRejectsZero(t *testing.T) {
	if _, err := NewBudget(0, 1); err == nil {
		t.Error("NewBudget(0, 1): no error")
	}
	if _, err := NewBudget(1, 0); err == nil {
		t.Error("NewBudget(1, 0): no error")
	}
}

// Releases from many goroutines while one goroutine acquires: the bounds
// hold at every moment and nothing deadlocks. Run with -race.
func TestBudgetConcurrentRelease(t *testing.T) {
	const maxRecords, maxBytes, total = 8, 1000, 5000
	b := newTestBudget(t, maxRecords, maxBytes)
	var inRecords, inBytes, overs atomic.Int64
	work := make(chan int64, total)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for size := range work {
				inRecords.Add(-1)
				inBytes.Add(-size)
				b.Release(1, size)
			}
		}()
	}
	for i := range total {
		size := int64(1 + i%300)
		for !acquire(t, b, 1, size, time.Second) {
		}
		if r, n := inRecords.Add(1), inBytes.Add(size); r > maxRecords || n > maxBytes {
			overs.Add(1)
		}
		work <- size
	}
	close(work)
	wg.Wait()
	if overs.Load() != 0 {
		t.Errorf("the bound was exceeded %d times", overs.Load())
	}
	if r, n := b.InFlight(); r != 0 || n != 0 {
		t.Errorf("InFlight() = %d, %d after all releases", r, n)
	}
}
