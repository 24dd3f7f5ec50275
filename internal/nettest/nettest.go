// Package nettest starts the small loopback peers that many of skiff's
// tests need: a TCP echo, a UDP echo, an accept loop for a server of the
// test's own, an address where nothing listens, a SOCKS5 CONNECT through
// a proxy under test, and a self-signed
// certificate for a loopback TLS server. They
// are real sockets on 127.0.0.1, not mocks, so the code
// under test dials and relays exactly as it would in use. Each peer is
// stopped by tb.Cleanup: its socket is closed and its goroutines have
// returned before the test ends.
//
// The package is for tests only; nothing outside _test.go files imports it.
package nettest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"io"
	"math/big"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"
)

// TCPEcho starts a TCP server on 127.0.0.1 that echoes what each
// connection sends until the peer closes or half-closes its side (EOF),
// then closes the connection. It returns the server's address.
//
// At cleanup the listener and any connection still open are closed.
func TCPEcho(tb testing.TB) netip.AddrPort {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("nettest: TCP echo: %v", err)
	}
	Serve(tb, ln, func(c net.Conn) { io.Copy(c, c) })
	return ln.Addr().(*net.TCPAddr).AddrPort()
}

// Serve accepts connections on ln until cleanup and runs handle on each
// in a goroutine of its own, closing the connection when handle returns.
//
// At cleanup ln and any connection still open are closed, and Serve's
// goroutines have returned before the test ends.
func Serve(tb testing.TB, ln net.Listener, handle func(net.Conn)) {
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		conns  = make(map[net.Conn]struct{})
		closed bool
	)
	tb.Cleanup(func() {
		ln.Close()
		mu.Lock()
		closed = true
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			if closed {
				mu.Unlock()
				c.Close()
				return
			}
			conns[c] = struct{}{}
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				handle(c)
				c.Close()
				mu.Lock()
				delete(conns, c)
				mu.Unlock()
			}()
		}
	}()
}

// UDPEcho starts a UDP socket on 127.0.0.1 that sends every datagram it
// receives (up to 65535 bytes) back to its source unchanged. It returns the
// socket's address. The echo does not allocate per datagram, so tests that
// count allocations around a round trip through it see only their own.
//
// At cleanup the socket is closed.
func UDPEcho(tb testing.TB) netip.AddrPort {
	tb.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		tb.Fatalf("nettest: UDP echo: %v", err)
	}
	done := make(chan struct{})
	tb.Cleanup(func() {
		c.Close()
		<-done
	})
	go func() {
		defer close(done)
		b := make([]byte, 65535)
		for {
			n, from, err := c.ReadFromUDPAddrPort(b)
			if err != nil {
				return
			}
			c.WriteToUDPAddrPort(b[:n], from)
		}
	}()
	return c.LocalAddr().(*net.UDPAddr).AddrPort()
}

// Dial returns a TCP connection from this process to an echo server on
// loopback, closed when the test ends: a socket of the test's own, for
// tests that look sockets up.
func Dial(tb testing.TB) net.Conn {
	tb.Helper()
	c, err := net.Dial("tcp", TCPEcho(tb).String())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// ClosedPort returns a TCP address on 127.0.0.1 where nothing listens: it
// was just bound and released, so a dial to it is refused (unless another
// socket takes the port in between, which the kernel's allocation makes
// unlikely within a test).
func ClosedPort(tb testing.TB) netip.AddrPort {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("nettest: closed port: %v", err)
	}
	ap := ln.Addr().(*net.TCPAddr).AddrPort()
	ln.Close()
	return ap
}

// SelfSigned returns a self-signed ECDSA P-256 certificate valid for
// 127.0.0.1 and the DNS name name (also its common name), from an hour
// ago to an hour from now, and the hex SHA-256 of its DER encoding: the
// form a certificate pin takes in a node's TLS options.
func SelfSigned(tb testing.TB, name string) (cert tls.Certificate, pin string) {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatalf("nettest: certificate for %s: %v", name, err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: name},
		DNSNames:     []string{name},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatalf("nettest: certificate for %s: %v", name, err)
	}
	sum := sha256.Sum256(der)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, hex.EncodeToString(sum[:])
}
