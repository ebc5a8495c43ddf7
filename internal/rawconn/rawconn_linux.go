package rawconn

import (
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// conn is a net.Conn whose Read and Write are raw system calls on its
// non-blocking socket; everything else is the wrapped connection's.
type conn struct {
	net.Conn
	raw syscall.RawConn
}

// Wrap returns c reading and writing through raw system calls when c is a
// *net.TCPConn or *net.UnixConn on a non-blocking stream socket, and c
// itself otherwise.
func Wrap(c net.Conn) net.Conn {
	var sc syscall.Conn
	switch t := c.(type) {
	case *net.TCPConn:
		sc = t
	case *net.UnixConn:
		sc = t
	default:
		return c
	}
	raw, err := sc.SyscallConn()
	if err != nil || !nonBlockingStream(raw) {
		return c
	}
	return &conn{Conn: c, raw: raw}
}

// nonBlockingStream reports whether raw's descriptor is a stream socket in
// non-blocking mode. The net package makes its sockets non-blocking, but
// File().Fd() on one clears O_NONBLOCK for its duplicate and the original
// alike; a raw read on a blocking descriptor would block holding its P,
// deaf to deadlines, with a collection waiting on it.
func nonBlockingStream(raw syscall.RawConn) bool {
	ok := false
	err := raw.Control(func(fd uintptr) {
		flags, _, e := syscall.RawSyscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
		if e != 0 || flags&syscall.O_NONBLOCK == 0 {
			return
		}
		typ, err := syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TYPE)
		ok = err == nil && typ == syscall.SOCK_STREAM
	})
	return err == nil && ok
}

// Read reads what the socket has, up to len(p), waiting in the netpoller
// (under the read deadline) while it has nothing.
func (c *conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var errno syscall.Errno
	err := c.raw.Read(func(fd uintptr) bool {
		for {
			r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			switch e {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false
			}
			n, errno = int(r), e
			return true
		}
	})
	if err != nil {
		return 0, c.opError("read", err)
	}
	if errno != 0 {
		return 0, c.opError("read", os.NewSyscallError("read", errno))
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// Write writes all of p, waiting in the netpoller (under the write
// deadline) while the socket's buffer is full.
func (c *conn) Write(p []byte) (int, error) {
	var n int
	var errno syscall.Errno
	var short error
	err := c.raw.Write(func(fd uintptr) bool {
		for n < len(p) {
			r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[n])), uintptr(len(p)-n))
			switch {
			case e == 0 && r == 0: // as internal/poll: no progress, no error
				short = io.ErrUnexpectedEOF
				return true
			case e == 0 && int(r) > len(p)-n: // as internal/poll (Go issue 61060)
				short = fmt.Errorf("rawconn: invalid return from write: got %d from a write of %d", r, len(p)-n)
				return true
			case e == 0:
				n += int(r)
			case e == syscall.EINTR:
			case e == syscall.EAGAIN:
				return false
			default:
				errno = e
				return true
			}
		}
		return true
	})
	if err != nil {
		return n, c.opError("write", err)
	}
	if short != nil {
		return n, short
	}
	if errno != 0 {
		return n, c.opError("write", os.NewSyscallError("write", errno))
	}
	return n, nil
}

// opError is err as the net package reports a failed op: a *net.OpError
// naming the connection's addresses, with Timeout() true past a deadline.
func (c *conn) opError(op string, err error) error {
	if oe, ok := err.(*net.OpError); ok { // RawConn's "raw-read", "raw-write"
		e := *oe
		e.Op = op
		return &e
	}
	e := &net.OpError{Op: op, Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
	if e.Addr != nil {
		e.Net = e.Addr.Network()
	}
	return e
}
