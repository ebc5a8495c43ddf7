package rawconn

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// pair is a connected client (wrapped) and server end of network.
func pair(t *testing.T, network, addr string) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	c, err := net.Dial(network, ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s := <-accepted
	if s == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return Wrap(c), s
}

func sockets(t *testing.T) map[string][2]net.Conn {
	m := map[string][2]net.Conn{}
	c, s := pair(t, "tcp", "127.0.0.1:0")
	m["tcp"] = [2]net.Conn{c, s}
	c, s = pair(t, "unix", filepath.Join(t.TempDir(), "s"))
	m["unix"] = [2]net.Conn{c, s}
	return m
}

func TestWrapsOnlyNetSockets(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if Wrap(a) != a {
		t.Error("Wrap(net.Pipe end) is not the conn itself")
	}
	c, _ := pair(t, "tcp", "127.0.0.1:0")
	if _, ok := c.(*conn); !ok && runtime.GOOS == "linux" {
		t.Errorf("Wrap(*net.TCPConn) = %T, want *conn on Linux", c)
	}
}

func TestReadWrite(t *testing.T) {
	for name, cs := range sockets(t) {
		c, s := cs[0], cs[1]
		// Larger than the socket buffers: Write waits for room, Read
		// returns what is there.
		want := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB
		done := make(chan error, 1)
		go func() {
			_, err := c.Write(want)
			done <- err
		}()
		got := make([]byte, len(want))
		if _, err := io.ReadFull(s, got); err != nil {
			t.Fatalf("%s: server read: %v", name, err)
		}
		if err := <-done; err != nil {
			t.Fatalf("%s: client write: %v", name, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: server read other bytes than the client wrote", name)
		}
		go func() {
			_, err := s.Write(want)
			done <- err
		}()
		if _, err := io.ReadFull(c, got); err != nil {
			t.Fatalf("%s: client read: %v", name, err)
		}
		if err := <-done; err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: server to client: err %v, equal %v", name, err, bytes.Equal(got, want))
		}
		if n, err := c.Read(nil); n != 0 || err != nil {
			t.Errorf("%s: Read(nil) = %d, %v, want 0, nil", name, n, err)
		}
	}
}

func TestEOF(t *testing.T) {
	c, s := pair(t, "tcp", "127.0.0.1:0")
	if _, err := s.Write([]byte("last")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "last" {
		t.Fatalf("ReadAll = %q, %v, want \"last\", nil", got, err)
	}
	if _, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("Read after the peer closed = %v, want io.EOF", err)
	}
}

func TestReadDeadline(t *testing.T) {
	c, _ := pair(t, "tcp", "127.0.0.1:0")
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	_, err := c.Read(make([]byte, 8))
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read past its deadline = %v, want a net.Error timing out with os.ErrDeadlineExceeded", err)
	}
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Op != "read" {
		t.Errorf("Read past its deadline = %#v, want a *net.OpError with Op read", err)
	}
	// A deadline moved to the past interrupts a read in progress (the
	// stream's interrupt does this).
	_ = c.SetReadDeadline(time.Time{})
	go func() {
		time.Sleep(20 * time.Millisecond)
		_ = c.SetReadDeadline(time.Unix(1, 0))
	}()
	if _, err := c.Read(make([]byte, 8)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("Read interrupted by a past deadline = %v, want os.ErrDeadlineExceeded", err)
	}
}

func TestCloseEndsRead(t *testing.T) {
	c, _ := pair(t, "tcp", "127.0.0.1:0")
	go func() {
		time.Sleep(20 * time.Millisecond)
		c.Close()
	}()
	if _, err := c.Read(make([]byte, 8)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Read on a conn closed meanwhile = %v, want net.ErrClosed", err)
	}
	if _, err := c.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Write on a closed conn = %v, want net.ErrClosed", err)
	}
}

func TestWriteToResetPeer(t *testing.T) {
	c, s := pair(t, "tcp", "127.0.0.1:0")
	s.(*net.TCPConn).SetLinger(0)
	s.Close() // RST
	var err error
	for i := 0; i < 100 && err == nil; i++ {
		_, err = c.Write(bytes.Repeat([]byte("x"), 1<<16))
		time.Sleep(time.Millisecond)
	}
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Op != "write" {
		t.Fatalf("Write to a reset peer = %v, want a *net.OpError with Op write", err)
	}
	var se *os.SyscallError
	if !errors.As(err, &se) {
		t.Errorf("Write to a reset peer = %v, want the errno as an *os.SyscallError", err)
	}
}

// A socket made blocking (File().Fd() clears O_NONBLOCK on the socket it
// duplicates) must not be wrapped: a raw read would block holding its P.
func TestBlockingSocketNotWrapped(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if s, err := ln.Accept(); err == nil {
			defer s.Close()
			time.Sleep(time.Second)
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f, err := c.(*net.TCPConn).File() // the duplicate shares the blocking flag
	if err != nil {
		t.Fatal(err)
	}
	_ = f.Fd() // makes the descriptor blocking
	defer f.Close()
	if w := Wrap(c); w != c {
		t.Errorf("Wrap(a blocking socket) = %T, want the conn itself", w)
	}
}
