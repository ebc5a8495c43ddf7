package sink

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"sync/atomic"
)

// answerLoser makes produce answers get lost on the way back, as when a
// connection breaks after the broker took a request: installed as the
// producer's dialer, its connections forward every request, and for the
// next `left` produce requests read the broker's answer (so the broker has
// written the batch) and close the connection instead of passing it on.
type answerLoser struct {
	left atomic.Int32 // produce answers still to lose
	lost atomic.Int32 // produce answers lost so far
}

// install makes p's connections go through l. Call it before the first Send.
func (l *answerLoser) install(p *Producer) {
	p.transport.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &losingConn{Conn: c, l: l, lose: map[int32]bool{}}, nil
	}
}

// losingConn frames the Kafka protocol both ways (a 4-byte size, then the
// request header: api key, version, correlation id; a response starts with
// the correlation id) to know which answer belongs to a produce request.
type losingConn struct {
	net.Conn
	l *answerLoser

	lmu  sync.Mutex
	lose map[int32]bool // correlation ids whose answers to lose

	wmu  sync.Mutex // the writing side
	out  []byte     // request bytes written, from the current frame's start
	skip int        // request bytes of the current frame still to pass

	rmu     sync.Mutex // the reading side
	pending []byte     // an answer read, not yet handed to the client
	dead    bool
}

func (c *losingConn) Write(b []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.mark(b)
	return c.Conn.Write(b)
}

// mark finds the produce requests in b, before they are forwarded: their
// answers cannot arrive before they are marked.
func (c *losingConn) mark(b []byte) {
	for len(b) > 0 {
		if c.skip > 0 {
			n := min(c.skip, len(b))
			c.skip, b = c.skip-n, b[n:]
			continue
		}
		need := 12 - len(c.out)
		n := min(need, len(b))
		c.out, b = append(c.out, b[:n]...), b[n:]
		if len(c.out) < 12 {
			return
		}
		size := int(binary.BigEndian.Uint32(c.out))
		key := int16(binary.BigEndian.Uint16(c.out[4:]))
		corr := int32(binary.BigEndian.Uint32(c.out[8:]))
		if key == 0 && c.l.left.Add(-1) >= 0 {
			c.lmu.Lock()
			c.lose[corr] = true
			c.lmu.Unlock()
		}
		c.skip, c.out = size-8, c.out[:0]
	}
}

func (c *losingConn) Read(b []byte) (int, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if len(c.pending) == 0 {
		if c.dead {
			return 0, io.ErrUnexpectedEOF
		}
		var size [4]byte
		if _, err := io.ReadFull(c.Conn, size[:]); err != nil {
			return 0, err
		}
		frame := make([]byte, 4+binary.BigEndian.Uint32(size[:]))
		copy(frame, size[:])
		if _, err := io.ReadFull(c.Conn, frame[4:]); err != nil {
			return 0, err
		}
		c.lmu.Lock()
		lose := c.lose[int32(binary.BigEndian.Uint32(frame[4:]))]
		c.lmu.Unlock()
		if lose {
			c.dead = true
			c.l.lost.Add(1)
			c.Conn.Close()
			return 0, io.ErrUnexpectedEOF
		}
		c.pending = frame
	}
	n := copy(b, c.pending)
	c.pending = c.pending[n:]
	return n, nil
}
