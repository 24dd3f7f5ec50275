package nettest

import (
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"
)

// SOCKSConnect opens a flow to dst through the SOCKS5 proxy at proxy (no
// authentication, CONNECT to an IP address) and returns it once the proxy
// has answered success, closed when the test ends. Its deadline is 5 s
// away, for the test's exchange over it.
func SOCKSConnect(tb testing.TB, proxy string, dst netip.AddrPort) net.Conn {
	tb.Helper()
	c, err := net.DialTimeout("tcp", proxy, 5*time.Second)
	if err != nil {
		tb.Fatalf("nettest: dial the SOCKS5 proxy %s: %v", proxy, err)
	}
	tb.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(5 * time.Second))
	ip := dst.Addr().Unmap()
	atyp := byte(1)
	if ip.Is6() {
		atyp = 4
	}
	req := append([]byte{5, 1, 0, 5, 1, 0, atyp}, ip.AsSlice()...)
	req = binary.BigEndian.AppendUint16(req, dst.Port())
	if _, err := c.Write(req); err != nil {
		tb.Fatalf("nettest: SOCKS5 request to %s: %v", proxy, err)
	}
	// The greeting's answer (VER METHOD), then the reply: VER REP RSV
	// ATYP, the bound address and port.
	var head [6]byte
	if _, err := io.ReadFull(c, head[:]); err != nil || head != [6]byte{5, 0, 5, 0, 0, head[5]} {
		tb.Fatalf("nettest: SOCKS5 CONNECT %s via %s: reply %v, %v", dst, proxy, head, err)
	}
	bound := map[byte]int{1: 4, 4: 16}[head[5]]
	if bound == 0 {
		tb.Fatalf("nettest: SOCKS5 CONNECT %s via %s: bound address type %d", dst, proxy, head[5])
	}
	if _, err := io.ReadFull(c, make([]byte, bound+2)); err != nil {
		tb.Fatalf("nettest: SOCKS5 CONNECT %s via %s: bound address: %v", dst, proxy, err)
	}
	return c
}
