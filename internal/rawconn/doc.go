// Package rawconn wraps a TCP or Unix socket connection so that its reads
// and writes do not tell the Go scheduler a system call is in progress.
//
// The sockets the net package opens are non-blocking: a read or write
// returns at once, with data or EAGAIN, and the runtime's netpoller does the
// waiting. Yet net.Conn makes each read and write through syscall.Syscall,
// which enters the scheduler's syscall state, and entering it wakes the
// runtime's monitor thread (sysmon) if that thread found the process idle
// and went to sleep. Woken by a system call, sysmon polls every 20 µs for a
// while: at a steady 1,000 events a second, where the relay goes idle and
// wakes about once per event, sysmon's wake-ups and polls were a quarter of
// the relay's CPU (perf, docs/performance.md "What an event costs").
//
// Wrap's connection makes the same non-blocking reads and writes with
// syscall.RawSyscall, inside the connection's syscall.RawConn, so the
// netpoller still waits when the socket has nothing (or no room) and read
// and write deadlines still hold. Only connections of the net package on a
// stream socket whose descriptor is non-blocking are wrapped (checked once,
// in Wrap): a descriptor that might block must not be read this way.
//
// The race detector does not see raw system calls: it neither checks the
// buffers the kernel fills or reads nor links a write on one end to the read
// on the other, as it does for net.Conn. The relay's tests run under -race
// with the wrapped connections all the same, so that they test the code the
// relay runs.
package rawconn
