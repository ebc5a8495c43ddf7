package main

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
)

// connLimiter is a listener that holds at most max connections. When one
// more arrives, it closes the oldest connection not inside a handler (an
// idle keep-alive connection, or one still sending its request) to make
// room, so that a crowd of idle or slow connections neither grows the
// process without bound nor keeps a probe's new connection out: the
// newest connection is the last to go. A connection inside a handler is
// never closed for room; when all are, the new one is closed.
type connLimiter struct {
	net.Listener
	max int

	mu    sync.Mutex
	conns []*limitedConn // oldest first
}

func limitConns(ln net.Listener, max int) *connLimiter {
	return &connLimiter{Listener: ln, max: max}
}

func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		lc := &limitedConn{Conn: c, l: l}
		victim, ok := l.admit(lc)
		if victim != nil {
			victim.Close()
		}
		if ok {
			return lc, nil
		}
		c.Close() // every connection is inside a handler
	}
}

// admit adds c, returning the connection to close for room, if any, and
// whether c was added.
func (l *connLimiter) admit(c *limitedConn) (*limitedConn, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var victim *limitedConn
	if len(l.conns) >= l.max {
		for i, old := range l.conns {
			if old.busy.Load() == 0 {
				victim = old
				l.conns = append(l.conns[:i], l.conns[i+1:]...)
				break
			}
		}
		if victim == nil {
			return nil, false
		}
	}
	l.conns = append(l.conns, c)
	return victim, true
}

func (l *connLimiter) remove(c *limitedConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, old := range l.conns {
		if old == c {
			l.conns = append(l.conns[:i], l.conns[i+1:]...)
			return
		}
	}
}

type limitedConn struct {
	net.Conn
	l    *connLimiter
	busy atomic.Int32 // handlers running on the connection
	once sync.Once
}

func (c *limitedConn) Close() error {
	c.once.Do(func() { c.l.remove(c) })
	return c.Conn.Close()
}

type connKey struct{}

// connContext is the server's ConnContext: it hands the connection to
// the handlers (limitHandlers).
func connContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// limitHandlers runs at most max handlers at once, answering 503 to the
// others at once, and marks the connection of a running handler busy, so
// that connLimiter does not close it.
func limitHandlers(h http.Handler, max int) http.Handler {
	sem := make(chan struct{}, max)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, ok := r.Context().Value(connKey{}).(*limitedConn); ok {
			c.busy.Add(1)
			defer c.busy.Add(-1)
		}
		select {
		case sem <- struct{}{}:
			defer func() { <-sem }()
			h.ServeHTTP(w, r)
		default:
			http.Error(w, "too many requests at once", http.StatusServiceUnavailable)
		}
	})
}
