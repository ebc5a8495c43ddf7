package replication

import (
	"syscall"
	"time"
)

// coalescePause is the stream's one pause per transaction (stream.coalesce).
// 200 µs: the walsender sends a small transaction's messages within tens of
// microseconds of each other; at 1,000 transactions a second the session
// still spends most of its time waiting on the socket (500 µs saved no
// more CPU in scripts/pair).
const coalescePause = 200 * time.Microsecond

// coalesceWaited: a receive at least this long waited for the server (a
// backlog reads from buffers in a few microseconds).
const coalesceWaited = 50 * time.Microsecond

// pause blocks the calling thread for d: one nanosleep, no park and wake
// of the goroutine. A Go timer would not do: with the process otherwise
// idle it sleeps at least a millisecond (the netpoller waits in whole
// milliseconds), and its park and wake-up are what the pause saves.
func pause(d time.Duration) {
	if d <= 0 {
		return
	}
	ts := syscall.NsecToTimespec(int64(d))
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
	}
}
