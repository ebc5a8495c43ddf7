package relay

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/outboxrelay/outboxrelay/capture"
)

// Checkpoint decides which LSN may be confirmed to PostgreSQL: invariants 1
// and 2 of the design. It tracks transactions in commit order, each with the
// number of its records that Kafka has not acknowledged yet.
//
// Which LSN a finished transaction confirms. A Commit message carries the
// commit LSN (where the commit WAL record starts; Begin's final LSN is the
// same value) and the end LSN (where that record ends). On START_REPLICATION
// the walsender decodes from the slot's restart_lsn but skips every
// transaction whose commit record starts before confirmed_flush_lsn
// (SnapBuildXactNeedsSkip in PostgreSQL's snapbuild.c compares the commit
// record's start with start_decoding_at, which is confirmed_flush_lsn). So
// confirming the commit LSN would not skip that transaction: it would be sent
// again after every restart even though Kafka has all of it. Confirming the
// end LSN skips it, and cannot skip a later transaction, because a later
// commit record starts at or after this one's end. That is also where the
// server itself positions a commit: the XLogData frame carrying a Commit
// message has WALStart = end LSN, which is what pglogrepl's example and
// pg_recvlogical confirm. The checkpoint therefore confirms end LSNs.
//
// Concurrency: Begin, Tx.Add, Tx.Commit, Tx.Abandon and Idle belong to the
// goroutine that owns the replication connection. Tx.Ack may be called from
// any goroutine (the Kafka producer's completion callbacks), concurrently
// with everything else. Confirmed, Err and InFlight may be
// called from any goroutine.
type Checkpoint struct {
	mu        sync.Mutex
	confirmed capture.LSN
	open      *Tx   // the transaction between Begin and Commit, if any
	queue     []*Tx // transactions not yet confirmed, in commit order; open is last; a committed one with nothing in flight is folded into the one before it
	inFlight  int   // records added and not acknowledged, abandoned ones included
	err       error // first failure
	corrupt   bool  // an API misuse made the counts untrustworthy: nothing advances

}

// Tx is one transaction in the checkpoint. Its fields are guarded by the
// checkpoint's mutex.
type Tx struct {
	c           *Checkpoint
	commitTime  time.Time // from Begin; zero for a snapshot; never changes (read without mu)
	finalLSN    capture.LSN
	endLSN      capture.LSN
	outstanding int
	committed   bool
	abandoned   bool
	failed      bool
}

// ErrRecordFailed surfaces from Checkpoint.Err when the sink reported a
// record as permanently failed: the relay must stop, and a restart resumes
// from the confirmed LSN, which is before that record.
var ErrRecordFailed = errors.New("record not acknowledged by Kafka")

// NewCheckpoint returns a checkpoint that has confirmed start: the slot's
// confirmed_flush_lsn, or the LSN streaming starts from.
func NewCheckpoint(start capture.LSN) *Checkpoint {
	return &Checkpoint{
		confirmed: start,
	}
}

// Begin opens a transaction on a Begin message. finalLSN is the message's
// final LSN; it must match the commit LSN of the Commit that closes it.
// Protocol version 1 never interleaves transactions, so a Begin while
// another transaction is open is an error.
func (c *Checkpoint) Begin(finalLSN capture.LSN) (*Tx, error) {
	return c.BeginAt(finalLSN, time.Time{})
}

// BeginAt is Begin with the transaction's commit time, for Oldest.
func (c *Checkpoint) BeginAt(finalLSN capture.LSN, commitTime time.Time) (*Tx, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open != nil {
		return nil, fmt.Errorf("checkpoint: Begin of transaction %s while transaction %s is open", finalLSN, c.open.finalLSN)
	}
	t := &Tx{c: c, finalLSN: finalLSN, commitTime: commitTime}
	c.open = t
	c.queue = append(c.queue, t)
	return t, nil
}

// FinalLSN is the LSN of the transaction's commit record, from its Begin.
// It never changes, so it needs no lock.
func (t *Tx) FinalLSN() capture.LSN { return t.finalLSN }

// Add records n more records of the transaction that are about to be sent
// to Kafka. Call it before sending, so that an acknowledgement can never
// arrive for a record the checkpoint does not know about.
func (t *Tx) Add(n int) {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open != t || n < 0 {
		c.corruptLocked(fmt.Errorf("checkpoint: Add(%d) to transaction %s that is not open", n, t.finalLSN))
		return
	}
	t.outstanding += n
	c.inFlight += n
}

// Ack records the outcome of one record of the transaction, as reported by
// the sink. A nil err means Kafka acknowledged it. A non-nil err means the
// sink has given up on it (retrying is the sink's job): the transaction and
// every later one stay unconfirmed forever and Err returns the failure
// (ErrRecordFailed). Earlier transactions still get confirmed as their acks
// arrive, so the relay can stop reading, flush the producer, confirm
// everything before the failed record and exit; a restart stops at the same
// record again.
func (t *Tx) Ack(err error) {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.outstanding == 0 {
		c.corruptLocked(fmt.Errorf("checkpoint: more acknowledgements than records in transaction %s", t.finalLSN))
		return
	}
	t.outstanding--
	c.inFlight--
	if err != nil {
		t.failed = true
		c.failLocked(fmt.Errorf("checkpoint: transaction %s: %w: %w", t.finalLSN, ErrRecordFailed, err))
		return
	}
	if t.outstanding == 0 {
		c.advanceLocked()
	}
}

// Commit closes the transaction on its Commit message. From now on it
// counts as done once all its records are acknowledged, and it is confirmed
// (with its end LSN) once it and every earlier transaction are done.
func (t *Tx) Commit(commitLSN, endLSN capture.LSN) error {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open != t {
		return fmt.Errorf("checkpoint: Commit %s of transaction %s that is not open", commitLSN, t.finalLSN)
	}
	if commitLSN != t.finalLSN {
		return fmt.Errorf("checkpoint: Commit LSN %s differs from the final LSN %s of its Begin", commitLSN, t.finalLSN)
	}
	if endLSN < commitLSN {
		return fmt.Errorf("checkpoint: transaction %s: end LSN %s before its commit LSN", commitLSN, endLSN)
	}
	t.endLSN = endLSN
	t.committed = true
	c.open = nil
	// Never a failed one: its failure must keep blocking what follows.
	if n := len(c.queue); t.outstanding == 0 && !t.failed && c.err == nil && n >= 2 && !c.queue[n-2].failed {
		// Nothing of it waits for Kafka: it is done when the transaction
		// before it is. Folding it into that one keeps the queue at one
		// entry per transaction with records in flight, however many
		// transactions without outbox rows commit while Kafka is slow.
		prev := c.queue[n-2]
		prev.endLSN = max(prev.endLSN, endLSN)
		c.queue[n-1] = nil
		c.queue = c.queue[:n-1]
	}
	c.advanceLocked()
	return nil
}

// Abandon drops the open transaction when the replication connection is
// lost before its Commit: the server sends it again, whole, after the
// reconnect. Acknowledgements of records already sent for it are still
// counted as in flight until they arrive, but no longer hold anything back.
func (t *Tx) Abandon() {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open != t {
		return
	}
	c.open = nil
	t.abandoned = true
	c.queue[len(c.queue)-1] = nil // the open transaction is always last
	c.queue = c.queue[:len(c.queue)-1]
	c.advanceLocked()
}

// Idle handles a primary keepalive: walEnd, the server's WAL end, becomes
// the confirmed LSN when no transaction is open, every transaction is
// confirmed and nothing is in flight. Otherwise an idle outbox in a busy
// database would never let the slot advance; advancing with work pending
// would confirm past records Kafka does not have. Idle reports whether the
// confirmed LSN moved. The stream goroutine may also call it with the end of
// a frame that arrives outside any transaction (a non-transactional logical
// decoding message).
func (c *Checkpoint) Idle(walEnd capture.LSN) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open != nil || len(c.queue) > 0 || c.inFlight > 0 || c.err != nil || walEnd <= c.confirmed {
		return false
	}
	c.confirmed = walEnd
	return true
}

// Confirmed returns the LSN that may be sent to PostgreSQL as written,
// flushed and applied: every record of every transaction that committed
// before it has been acknowledged by Kafka.
func (c *Checkpoint) Confirmed() capture.LSN {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.confirmed
}

// Oldest returns the commit time of the oldest transaction not yet
// confirmed (being decoded, or waiting for Kafka), or the zero time when
// every transaction is confirmed (or the oldest is a snapshot).
func (c *Checkpoint) Oldest() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.queue) == 0 {
		return time.Time{}
	}
	return c.queue[0].commitTime
}

// InFlight returns how many records are sent and not yet acknowledged.
func (c *Checkpoint) InFlight() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inFlight
}

// Err returns the first failure: a record the sink gave up on
// (ErrRecordFailed), after which the confirmed LSN stops before that
// record's transaction, or a misuse of the API (more acks than records, Add
// outside an open transaction), after which it does not move at all.
func (c *Checkpoint) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// advanceLocked confirms the longest run of finished transactions at the
// head of the queue. A failed transaction is never finished, so nothing
// after a failed record is ever confirmed.
func (c *Checkpoint) advanceLocked() {
	if c.corrupt {
		return
	}
	for len(c.queue) > 0 {
		t := c.queue[0]
		if !t.committed || t.outstanding > 0 || t.failed {
			break
		}
		c.queue[0] = nil
		c.queue = c.queue[1:]
		// A transaction the server sent again after a reconnect can sit
		// behind its first copy with the same or a lower end LSN: the
		// confirmed LSN never moves backwards.
		if t.endLSN > c.confirmed {
			c.confirmed = t.endLSN
		}
	}
}

func (c *Checkpoint) corruptLocked(err error) {
	c.corrupt = true
	c.failLocked(err)
}

func (c *Checkpoint) failLocked(err error) {
	if c.err != nil {
		return
	}
	c.err = err
}
