package main

import "time"

// Pacing of the steady mode: transaction t of rowsPerTx rows is due
// t*rowsPerTx/rate seconds after the start, so the event rate holds on
// average whatever the batch size, and a late transaction does not shift
// the ones after it (the schedule is absolute, not sleep-after-send).

// dueAt is the offset from the start at which transaction t is due.
func dueAt(t int64, rowsPerTx int, rate float64) time.Duration {
	return time.Duration(float64(t) * float64(rowsPerTx) / rate * float64(time.Second))
}

// steadyEvents is the number of events a run of duration at rate inserts.
func steadyEvents(rate float64, d time.Duration) int64 {
	return int64(rate*d.Seconds() + 0.5)
}

// warmupEvents is the number of events inserted during the warm-up.
func warmupEvents(rate float64, warmup time.Duration, total int64) int64 {
	return min(total, steadyEvents(rate, warmup))
}
