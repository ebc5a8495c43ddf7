//go:build !linux

package rawconn

import "net"

// Wrap returns c: outside Linux the connection's own reads and writes are
// used.
func Wrap(c net.Conn) net.Conn { return c }
