package outbox

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"time"
)

// NewID returns a new UUID version 7 (RFC 9562) as text: 48 bits of Unix
// milliseconds, then random bits. Time-ordered ids keep the outbox's
// primary key index compact, as sql/outbox.sql's outbox_uuidv7() does.
// Write uses it for an event without an ID when the id column has no
// default; call it yourself to know the id before writing.
func NewID() string {
	return newUUIDv7(time.Now())
}

func newUUIDv7(now time.Time) string {
	var u [16]byte
	_, _ = rand.Read(u[6:]) // crypto/rand.Read never fails (Go 1.24+)
	var ms [8]byte
	binary.BigEndian.PutUint64(ms[:], uint64(now.UnixMilli()))
	copy(u[:6], ms[2:])
	u[6] = u[6]&0x0f | 0x70 // version 7
	u[8] = u[8]&0x3f | 0x80 // variant 10
	var s [36]byte
	hex.Encode(s[0:8], u[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], u[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], u[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], u[8:10])
	s[23] = '-'
	hex.Encode(s[24:], u[10:])
	return string(s[:])
}
