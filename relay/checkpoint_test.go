package relay

import (
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/outboxrelay/outboxrelay/capture"
)

// lsns of a test transaction: commit record at 100*i, ending 40 bytes later.
func commitLSN(i int) capture.LSN { return capture.LSN(1000 + 100*i) }
func endLSN(i int) capture.LSN    { return commitLSN(i) + 40 }

func begin(t *testing.T, c *Checkpoint, i int) *Tx {
	t.Helper()
	tx, err := c.Begin(commitLSN(i))
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

func commit(t *testing.T, tx *Tx, i int) {
	t.Helper()
	if err := tx.Commit(commitLSN(i), endLSN(i)); err != nil {
		t.Fatal(err)
	}
}

// committed begins transaction i, adds records records and commits it.
func committed(t *testing.T, c *Checkpoint, i, records int) *Tx {
	t.Helper()
	tx := begin(t, c, i)
	tx.Add(records)
	commit(t, tx, i)
	return tx
}

func wantConfirmed(t *testing.T, c *Checkpoint, want capture.LSN) {
	t.Helper()
	if got := c.Confirmed(); got != want {
		t.Errorf("Confirmed() = %s, want %s", got, want)
	}
}

// A fully acknowledged transaction confirms its end LSN, not its commit
// LSN: PostgreSQL re-sends every transaction whose commit record starts at
// or after confirmed_flush_lsn, so confirming the commit LSN would replay
// the last transaction after each restart.
func TestCheckpointConfirmsEndLSN(t *testing.T) {
	c := NewCheckpoint(500)
	tx := begin(t, c, 1)
	tx.Add(2)
	tx.Ack(nil)
	commit(t, tx, 1)
	wantConfirmed(t, c, 500)
	tx.Ack(nil)
	wantConfirmed(t, c, endLSN(1))
	if c.InFlight() != 0 {
		t.Errorf("InFlight() = %d, want 0", c.InFlight())
	}
}

func TestCheckpointOrderAcrossTransactions(t *testing.T) {
	c := NewCheckpoint(0)
	tx1 := committed(t, c, 1, 1)
	tx2 := begin(t, c, 2) // no records: another table, a logical message
	commit(t, tx2, 2)
	tx3 := committed(t, c, 3, 1)

	tx3.Ack(nil)
	wantConfirmed(t, c, 0) // tx1 still unacknowledged
	tx1.Ack(nil)
	wantConfirmed(t, c, endLSN(3))

	tx4 := begin(t, c, 4)
	commit(t, tx4, 4) // an empty transaction advances at once when nothing precedes it
	wantConfirmed(t, c, endLSN(4))
}

func TestCheckpointFailedAckStopsAtTheRecord(t *testing.T) {
	c := NewCheckpoint(0)
	tx1 := committed(t, c, 1, 1)
	tx2 := committed(t, c, 2, 2)
	tx3 := committed(t, c, 3, 1)

	boom := errors.New("message too large")
	tx2.Ack(boom)
	if err := c.Err(); !errors.Is(err, ErrRecordFailed) || !errors.Is(err, boom) {
		t.Errorf("Err() = %v, want ErrRecordFailed wrapping the sink's error", err)
	}
	tx2.Ack(nil)
	tx3.Ack(nil)
	wantConfirmed(t, c, 0)
	tx1.Ack(nil) // everything before the poison row is still confirmed
	wantConfirmed(t, c, endLSN(1))
	if c.Idle(10_000) {
		t.Error("Idle advanced after a failed record")
	}
	wantConfirmed(t, c, endLSN(1))
}

func TestCheckpointIdle(t *testing.T) {
	c := NewCheckpoint(100)
	if !c.Idle(200) {
		t.Error("Idle(200) with nothing pending did not advance")
	}
	if c.Idle(150) {
		t.Error("Idle moved the confirmed LSN backwards")
	}
	wantConfirmed(t, c, 200)

	tx := begin(t, c, 1)
	if c.Idle(5000) {
		t.Error("Idle advanced while a transaction is open")
	}
	tx.Add(1)
	commit(t, tx, 1)
	if c.Idle(5000) {
		t.Error("Idle advanced while a record is in flight")
	}
	tx.Ack(nil)
	wantConfirmed(t, c, endLSN(1))
	if !c.Idle(5000) {
		t.Error("Idle did not advance once everything was acknowledged")
	}
	wantConfirmed(t, c, 5000)
}

// After a lost connection the open transaction is abandoned; the server
// sends it again from the confirmed LSN, and records of the first attempt
// that are still in flight keep Idle from confirming past them.
func TestCheckpointAbandonAndResend(t *testing.T) {
	c := NewCheckpoint(0)
	tx1 := committed(t, c, 1, 1)
	tx2 := begin(t, c, 2)
	tx2.Add(1)
	tx2.Abandon()

	// Reconnected: tx1 (not yet confirmed) and tx2 arrive again.
	again1 := committed(t, c, 1, 1)
	again2 := committed(t, c, 2, 1)

	again1.Ack(nil)
	again2.Ack(nil)
	wantConfirmed(t, c, 0) // the first copy of tx1 is still unacknowledged
	tx1.Ack(nil)
	wantConfirmed(t, c, endLSN(2))
	if c.Idle(9000) {
		t.Error("Idle advanced while a record of the abandoned transaction is in flight")
	}
	tx2.Ack(nil)
	if !c.Idle(9000) {
		t.Error("Idle did not advance after the abandoned record was acknowledged")
	}
}

func TestCheckpointMisuse(t *testing.T) {
	c := NewCheckpoint(0)
	tx := begin(t, c, 1)
	if _, err := c.Begin(commitLSN(2)); err == nil {
		t.Error("Begin while a transaction is open: no error")
	}
	if err := tx.Commit(commitLSN(2), endLSN(2)); err == nil {
		t.Error("Commit with another LSN than Begin's: no error")
	}
	if err := tx.Commit(commitLSN(1), commitLSN(1)-1); err == nil {
		t.Error("Commit with end before commit: no error")
	}
	commit(t, tx, 1)
	if err := tx.Commit(commitLSN(1), endLSN(1)); err == nil {
		t.Error("second Commit: no error")
	}
	wantConfirmed(t, c, endLSN(1))

	tx2 := begin(t, c, 2)
	commit(t, tx2, 2)
	tx2.Ack(nil) // more acks than records: the counts cannot be trusted
	if c.Err() == nil {
		t.Error("an extra Ack is not an error")
	}
	tx3 := begin(t, c, 3)
	commit(t, tx3, 3)
	wantConfirmed(t, c, endLSN(2))
}

// simTx is a test transaction: the LSN it must confirm and, per record,
// whether the sink has acknowledged it (set before Ack is called).
type simTx struct {
	tx    *Tx
	i     int
	acked []atomic.Bool
	done  atomic.Bool // Commit returned
}

// simRecord is record r of a simTx.
type simRecord struct {
	s *simTx
	r int
}

// ack marks the record acknowledged, then tells the checkpoint, so that a
// checker that sees it unmarked knows the checkpoint has not seen it either.
func (rec simRecord) ack() {
	rec.s.acked[rec.r].Store(true)
	rec.s.tx.Ack(nil)
}

// beginSim begins transaction i with up to three records.
func beginSim(t *testing.T, c *Checkpoint, rng *rand.Rand, i int) *simTx {
	t.Helper()
	return &simTx{i: i, acked: make([]atomic.Bool, rng.IntN(4)), tx: begin(t, c, i)}
}

// maxAllowed is the highest LSN the checkpoint may have confirmed, given
// what is acknowledged and committed now. Its caller must read Confirmed
// before calling it: acks and commits only ever raise the bound.
func maxAllowed(start capture.LSN, txs []*simTx) capture.LSN {
	allowed := start
	for _, s := range txs {
		if !s.done.Load() {
			return allowed
		}
		for i := range s.acked {
			if !s.acked[i].Load() {
				return allowed
			}
		}
		allowed = endLSN(s.i)
	}
	return allowed
}

// The property of invariant 1: whatever order acknowledgements arrive in,
// interleaved with commits in any way, the confirmed LSN never passes a
// record that is not acknowledged, and it reaches the last commit once all
// are. Runs many random schedules, single-threaded so each is reproducible
// from its seed.
func TestCheckpointNeverConfirmsPastUnacked(t *testing.T) {
	for seed := uint64(0); seed < 2000; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		c := NewCheckpoint(0)
		var txs []*simTx
		var unacked []simRecord
		nTx := 1 + rng.IntN(12)
		for i := 1; i <= nTx; i++ {
			s := beginSim(t, c, rng, i)
			txs = append(txs, s)
			for r := range s.acked {
				s.tx.Add(1)
				unacked = append(unacked, simRecord{s, r})
				// Acks of earlier records may land before the next one is sent.
				for rng.IntN(3) == 0 && len(unacked) > 0 {
					j := rng.IntN(len(unacked))
					unacked[j].ack()
					unacked = append(unacked[:j], unacked[j+1:]...)
					checkBound(t, seed, c, txs)
				}
			}
			commit(t, s.tx, i)
			s.done.Store(true)
			checkBound(t, seed, c, txs)
		}
		rng.Shuffle(len(unacked), func(a, b int) { unacked[a], unacked[b] = unacked[b], unacked[a] })
		for _, rec := range unacked {
			rec.ack()
			checkBound(t, seed, c, txs)
		}
		if got := c.Confirmed(); got != endLSN(nTx) {
			t.Fatalf("seed %d: all acknowledged, Confirmed() = %s, want %s", seed, got, endLSN(nTx))
		}
	}
}

func checkBound(t *testing.T, seed uint64, c *Checkpoint, txs []*simTx) {
	t.Helper()
	confirmed := c.Confirmed()
	if allowed := maxAllowed(0, txs); confirmed > allowed {
		t.Fatalf("seed %d: confirmed %s past an unacknowledged record or open transaction (allowed up to %s)", seed, confirmed, allowed)
	}
}

// The same property with acknowledgements arriving from several goroutines
// in random order while the stream goroutine begins and commits, as the
// Kafka producer's completion goroutines deliver them. Run with -race.
func TestCheckpointConcurrentAckers(t *testing.T) {
	const nTx, ackers = 3000, 4
	c := NewCheckpoint(0)
	work := make(chan simRecord, 64)
	var wg sync.WaitGroup
	for a := range ackers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(a), 99))
			var held []simRecord
			for rec := range work {
				held = append(held, rec)
				if len(held) >= 1+rng.IntN(8) { // release a random one of the held records
					j := rng.IntN(len(held))
					held[j].ack()
					held = append(held[:j], held[j+1:]...)
				}
			}
			for _, rec := range held {
				rec.ack()
			}
		}()
	}

	rng := rand.New(rand.NewPCG(1, 2))
	var txs []*simTx
	var base capture.LSN // confirmed before txs[0]
	var violation string
	for i := 1; i <= nTx; i++ {
		s := beginSim(t, c, rng, i)
		txs = append(txs, s)
		for r := range s.acked {
			s.tx.Add(1)
			work <- simRecord{s, r}
		}
		commit(t, s.tx, i)
		s.done.Store(true)
		confirmed := c.Confirmed()
		if allowed := maxAllowed(base, txs); confirmed > allowed && violation == "" {
			violation = "confirmed " + confirmed.String() + " past allowed " + allowed.String()
		}
		if len(txs) > 64 && confirmed >= endLSN(txs[31].i) {
			base = endLSN(txs[31].i)
			txs = txs[32:] // confirmed: keep the scan short
		}
	}
	close(work)
	wg.Wait()
	if violation != "" {
		t.Fatal(violation)
	}
	wantConfirmed(t, c, endLSN(nTx))
	if c.InFlight() != 0 || c.Err() != nil {
		t.Errorf("after all acks: InFlight() = %d, Err() = %v", c.InFlight(), c.Err())
	}
}

// TestCheckpointQueueBoundedByRecords: transactions without outbox rows
// (other tables, updates, PostgreSQL 13's empty Begin/Commit) keep
// committing while one record waits for Kafka. The queue must not grow
// with them, and the confirmed LSN still reaches the last of them once the
// record is acknowledged, never before.
func TestCheckpointQueueBoundedByRecords(t *testing.T) {
	c := NewCheckpoint(0)
	held := committed(t, c, 0, 1)
	const empty = 100000
	for i := 1; i <= empty; i++ {
		committed(t, c, i, 0)
		if c.Confirmed() != 0 {
			t.Fatalf("after empty transaction %d: confirmed %s while transaction 0 waits for Kafka", i, c.Confirmed())
		}
	}
	c.mu.Lock()
	n := len(c.queue)
	c.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d transactions queued behind one record; want 1 entry", n)
	}
	// A transaction with records after them keeps its own entry.
	last := committed(t, c, empty+1, 2)
	held.Ack(nil)
	if got := c.Confirmed(); got != endLSN(empty) {
		t.Fatalf("confirmed %s after the held record's ack; want the end of the last empty transaction %s", got, endLSN(empty))
	}
	last.Ack(nil)
	last.Ack(nil)
	if got := c.Confirmed(); got != endLSN(empty+1) {
		t.Fatalf("confirmed %s; want %s", got, endLSN(empty+1))
	}
}

// TestCheckpointOldest: the commit time of the oldest unconfirmed
// transaction, for the lag metric; transactions folded into an earlier
// one do not change it, and it is zero once everything is confirmed.
func TestCheckpointOldest(t *testing.T) {
	c := NewCheckpoint(0)
	if !c.Oldest().IsZero() {
		t.Fatal("Oldest of an empty checkpoint is not zero")
	}
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	first, err := c.BeginAt(commitLSN(1), t0)
	if err != nil {
		t.Fatal(err)
	}
	first.Add(1)
	commit(t, first, 1)
	empty, err := c.BeginAt(commitLSN(2), t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	commit(t, empty, 2)
	if got := c.Oldest(); !got.Equal(t0) {
		t.Fatalf("Oldest = %v, want the held transaction's %v", got, t0)
	}
	first.Ack(nil)
	if got := c.Oldest(); !got.IsZero() || c.Confirmed() != endLSN(2) {
		t.Fatalf("after the ack: Oldest %v, confirmed %s; want zero and %s", got, c.Confirmed(), endLSN(2))
	}
}

// TestCheckpointFailedTransactionNotFolded pins a bug: a transaction whose
// record failed before its Commit has nothing outstanding, and folding it
// into the one before dropped its failure; the confirmed LSN then passed
// the refused record once the earlier transaction was acknowledged.
func TestCheckpointFailedTransactionNotFolded(t *testing.T) {
	c := NewCheckpoint(0)
	first := committed(t, c, 1, 1)
	second := begin(t, c, 2)
	second.Add(1)
	second.Ack(errors.New("TOPIC_AUTHORIZATION_FAILED"))
	commit(t, second, 2)
	first.Ack(nil)
	if got := c.Confirmed(); got != endLSN(1) {
		t.Fatalf("confirmed %s; want %s, the end of the transaction before the refused record", got, endLSN(1))
	}
	if !errors.Is(c.Err(), ErrRecordFailed) {
		t.Fatalf("Err() = %v; want ErrRecordFailed", c.Err())
	}
}
