package main

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"
)

// openFDs is how many file descriptors the process has open.
func openFDs(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(fds)
}

// Regression (issue 27, item 2): only ReadHeaderTimeout was set, so idle
// keep-alive connections and slow requests were kept for ever: 3,000 of
// them took the relay to 3,010 file descriptors. Now the server holds at
// most httpMaxConns, closing the oldest idle one for a new one, and
// /healthz keeps answering through the crowd.
func TestHTTPBoundedUnderIdleAndSlowConnections(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	st := newStatus()
	m := newMetrics(st, func() (int, int64) { return 0, 0 })
	addr, wait, err := serveHTTP(ctx, "127.0.0.1:0", m, st, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); wait() }()
	before := openFDs(t)

	const crowd = 3000
	conns := make([]net.Conn, 0, crowd)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range crowd {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		conns = append(conns, c)
		if i%2 == 0 {
			// Idle: one request answered, then the connection kept open.
			io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
				resp.Body.Close()
			}
		} else {
			// Slow: a request that never ends its header.
			io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
		}
	}

	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for i := range 20 {
		start := time.Now()
		resp, err := client.Get("http://" + addr + "/healthz")
		if err != nil {
			t.Fatalf("/healthz %d with %d connections open: %v", i, crowd, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || time.Since(start) > time.Second {
			t.Errorf("/healthz %d: %s in %s; want 200 OK within 1 s", i, resp.Status, time.Since(start))
		}
	}
	// The crowd's client ends are crowd descriptors of this process; the
	// server's ends may add httpMaxConns, and a few for the probes.
	if held := openFDs(t) - before - crowd; held > httpMaxConns+20 {
		t.Errorf("the server holds %d file descriptors for %d idle or slow connections; want at most %d", held, crowd, httpMaxConns+20)
	}
}

// TestHTTPHandlerLimit: a request beyond httpMaxHandlers running at once
// gets 503 at once; when every connection the limiter holds is inside a
// handler, a new connection is closed, none of theirs.
func TestHTTPHandlerLimit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		conns int
		want  string // what the request beyond the limit gets
	}{
		{"handlers full", 2 * httpMaxHandlers, "503"},
		{"connections all busy", httpMaxHandlers, "closed"},
	} {
		release := make(chan struct{})
		entered := make(chan struct{}, httpMaxHandlers)
		h := limitHandlers(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			entered <- struct{}{}
			<-release
		}), httpMaxHandlers)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: h, ConnContext: connContext}
		go srv.Serve(limitConns(ln, tc.conns))
		url := "http://" + ln.Addr().String() + "/"
		client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		errs := make(chan error, httpMaxHandlers)
		for range httpMaxHandlers {
			go func() {
				resp, err := client.Get(url)
				if err == nil {
					resp.Body.Close()
				}
				errs <- err
			}()
		}
		for range httpMaxHandlers {
			<-entered
		}
		got := "closed"
		if resp, err := client.Get(url); err == nil {
			resp.Body.Close()
			got = strconv.Itoa(resp.StatusCode)
		}
		if got != tc.want {
			t.Errorf("%s: the request beyond the limit got %s, want %s", tc.name, got, tc.want)
		}
		close(release)
		for range httpMaxHandlers {
			if err := <-errs; err != nil {
				t.Errorf("%s: a request inside a handler failed: %v", tc.name, err)
			}
		}
		srv.Close()
	}
}
