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

	mu    sync.Mutex
	codes []int16 // the partition error code of each lost answer (-1: unreadable)
}

// lostCodes returns the partition error codes of the answers lost.
func (l *answerLoser) lostCodes() []int16 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]int16(nil), l.codes...)
}

// install makes p's connections go through l. Call it before the first Send.
func (l *answerLoser) install(p *Producer) {
	p.transport.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &losingConn{Conn: c, l: l, lose: map[int32]int16{}}, nil
	}
}

// losingConn frames the Kafka protocol both ways (a 4-byte size, then the
// request header: api key, version, correlation id; a response starts with
// the correlation id) to know which answer belongs to a produce request.
type losingConn struct {
	net.Conn
	l *answerLoser

	lmu  sync.Mutex
	lose map[int32]int16 // correlation ids whose answers to lose: the request's version

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
		version := int16(binary.BigEndian.Uint16(c.out[6:]))
		corr := int32(binary.BigEndian.Uint32(c.out[8:]))
		if key == 0 && c.l.left.Add(-1) >= 0 {
			c.lmu.Lock()
			c.lose[corr] = version
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
		version, lose := c.lose[int32(binary.BigEndian.Uint32(frame[4:]))]
		c.lmu.Unlock()
		if lose {
			c.dead = true
			c.l.mu.Lock()
			c.l.codes = append(c.l.codes, produceAnswerCode(frame[8:], version))
			c.l.mu.Unlock()
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

// produceAnswerCode reads the first partition's error code of a produce
// response body (after the correlation id) of the given version: from v9
// on flexible (a tagged-field header, compact arrays and strings), -1 when
// it cannot be read.
func produceAnswerCode(b []byte, version int16) int16 {
	flexible := version >= 9
	if flexible {
		if _, n := binary.Uvarint(b); n > 0 { // the header's tagged fields: none
			b = b[n:]
		}
	}
	count := func(width int) (int, bool) { // an array length or string length
		if flexible {
			v, n := binary.Uvarint(b)
			if n <= 0 {
				return 0, false
			}
			b = b[n:]
			return int(v) - 1, true
		}
		if len(b) < width {
			return 0, false
		}
		v := 0
		if width == 4 {
			v = int(int32(binary.BigEndian.Uint32(b)))
		} else {
			v = int(int16(binary.BigEndian.Uint16(b)))
		}
		b = b[width:]
		return v, true
	}
	topics, ok := count(4)
	if !ok || topics < 1 {
		return -1
	}
	name, ok := count(2)
	if !ok || name < 0 || len(b) < name {
		return -1
	}
	b = b[name:]
	parts, ok := count(4)
	if !ok || parts < 1 || len(b) < 6 {
		return -1
	}
	return int16(binary.BigEndian.Uint16(b[4:])) // after the partition index
}
