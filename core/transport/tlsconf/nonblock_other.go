//go:build !unix

package tlsconf

import "net"

// nonblockReader would read from a socket without waiting; off Unix it
// never reads, so TryRead returns only what crypto/tls holds already.
type nonblockReader struct{}

func (*nonblockReader) init(net.Conn) {}

func (*nonblockReader) read([]byte) int { return 0 }

func (*nonblockReader) canWait() bool { return false }

func (*nonblockReader) ready() bool { return true }

func (*nonblockReader) wait() {}
