package main

import (
	"os"
	"runtime"
	rtmetrics "runtime/metrics"
	"runtime/pprof"
	"time"
)

// startMemProfile keeps, at path, a heap profile of the moment the live
// heap was largest: every 50 ms it reads the live heap the last garbage
// collection found (/gc/heap/live:bytes) and, when that is a new high by
// 256 KiB or more, writes the heap profile again (its in-use figures are
// of that same collection). For memory work: set
// OUTBOXRELAY_MEMPROFILE=/path/heap.pprof, read it with
// `go tool pprof -sample_index=inuse_space`. Records are sampled every
// 64 KiB allocated instead of Go's 512 KiB. The returned stop ends the
// sampling and writes the profile once more if the heap grew since.
func startMemProfile(path string) (stop func()) {
	runtime.MemProfileRate = 64 << 10
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		sample := []rtmetrics.Sample{{Name: "/gc/heap/live:bytes"}}
		var peak uint64
		check := func() {
			rtmetrics.Read(sample)
			if live := sample[0].Value.Uint64(); live >= peak+256<<10 {
				peak = live
				writeHeapProfile(path)
			}
		}
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				check()
			case <-done:
				check()
				return
			}
		}
	}()
	return func() { close(done); <-finished }
}

func writeHeapProfile(path string) {
	f, err := os.Create(path)
	if err != nil {
		return
	}
	_ = pprof.Lookup("heap").WriteTo(f, 0)
	_ = f.Close()
}
