//go:build !linux

package replication

import "time"

// coalescePause is 0 where pause cannot block the thread for well under a
// millisecond: the stream reads as messages come (stream.coalesce).
const coalescePause = 0

const coalesceWaited = 0

func pause(time.Duration) {}
