package main

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Peak RSS is sampled from /proc, not taken from rusage: a child started
// by Go (clone with CLONE_VM|CLONE_VFORK, then exec) inherits the parent's
// RSS high-water mark into ru_maxrss at exec, so rusage would report this
// benchmark's own peak whenever it is larger than the relay's (seen here:
// a `sleep` child "peaking" at the parent's 200 MB). VmHWM in
// /proc/PID/status is the high-water mark of the process's own memory
// since exec.

// rssSampler tracks the largest sum of VmHWM over the processes of one
// process group (the relay, and a wrapper shell with its children when
// --relay-cmd is a compound command).
type rssSampler struct {
	pgid int
	peak atomic.Int64 // KiB
}

// sample reads the group's VmHWM once and raises the peak.
func (r *rssSampler) sample() {
	if kib := groupHWM(r.pgid); kib > r.peak.Load() {
		r.peak.Store(kib)
	}
}

// run samples every interval until done is closed.
func (r *rssSampler) run(interval time.Duration, done <-chan struct{}) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		r.sample()
		select {
		case <-t.C:
		case <-done:
			return
		}
	}
}

// groupHWM sums VmHWM (KiB) over the live processes whose process group
// is pgid. Unreadable entries (processes that just exited) are skipped.
func groupHWM(pgid int) int64 {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	var sum int64
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pid != pgid {
			stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
			if err != nil || statPgrp(stat) != pgid {
				continue
			}
		}
		sum += vmHWM("/proc/" + e.Name() + "/status")
	}
	return sum
}

// statPgrp parses the process group (field 5) of /proc/PID/stat; the
// command name (field 2) is in parentheses and may contain spaces.
func statPgrp(stat []byte) int {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(string(stat[i+1:])) // state ppid pgrp …
	if len(f) < 3 {
		return -1
	}
	n, err := strconv.Atoi(f[2])
	if err != nil {
		return -1
	}
	return n
}

// vmHWM reads "VmHWM:   1234 kB" from a /proc status file.
func vmHWM(path string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n
			}
		}
	}
	return 0
}
