package core

import (
	"encoding/binary"
	"io"
	"net"
	"runtime"
	"testing"

	"github.com/skiffvpn/skiff/internal/nettest"
)

// BenchmarkSOCKSConnect measures a download through the whole local path:
// a loopback server → direct outbound → engine relay → mixed inbound →
// SOCKS5 client.
func BenchmarkSOCKSConnect(b *testing.B) {
	p := startProxy(b)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	chunk := make([]byte, 256<<10)
	total := int64(b.N) * int64(len(chunk))
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		for sent := int64(0); sent < total; sent += int64(len(chunk)) {
			if _, err := c.Write(chunk); err != nil {
				return
			}
		}
	}()
	_, port := splitPort(b, ln.Addr().String())
	c, rep, _ := socksRequest(b, p.addr, 1, "127.0.0.1", port)
	if rep != 0 {
		b.Fatalf("reply %#x", rep)
	}
	b.SetBytes(int64(len(chunk)))
	b.ReportAllocs()
	b.ResetTimer()
	if n, err := io.CopyN(io.Discard, c, total); err != nil {
		b.Fatalf("received %d of %d: %v", n, total, err)
	}
}

// BenchmarkSOCKSUDP measures datagram round trips through a SOCKS5 UDP
// association, the engine and the direct outbound to a loopback echo.
func BenchmarkSOCKSUDP(b *testing.B) {
	p := startProxy(b)
	echoAP := nettest.UDPEcho(b)
	_, rep, relayAP := socksRequest(b, p.addr, 3, "0.0.0.0", 0)
	if rep != 0 {
		b.Fatalf("reply %#x", rep)
	}
	uc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	defer uc.Close()
	ip := echoAP.Addr().As4()
	dgram := append([]byte{0, 0, 0, 1}, ip[:]...)
	dgram = binary.BigEndian.AppendUint16(dgram, echoAP.Port())
	dgram = append(dgram, make([]byte, 1200)...)
	buf := make([]byte, 2048)
	b.SetBytes(1200)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := uc.WriteToUDPAddrPort(dgram, relayAP); err != nil {
			b.Fatal(err)
		}
		if _, _, err := uc.ReadFromUDPAddrPort(buf); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIdleConnections opens b.N (at most 500, to stay within the
// file descriptor limit) idle SOCKS5 connections through the proxy to a
// loopback server and reports the Go heap and stacks held per connection:
// the proxy's share, plus the test client's and echo server's, as all run
// in this process.
func BenchmarkIdleConnections(b *testing.B) {
	n := min(b.N, 500)
	p := startProxy(b)
	_, port := splitPort(b, nettest.TCPEcho(b).String())
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	conns := make([]net.Conn, 0, n)
	for i := 0; i < n; i++ {
		c, rep, _ := socksRequest(b, p.addr, 1, "127.0.0.1", port)
		if rep != 0 {
			b.Fatalf("reply %#x", rep)
		}
		conns = append(conns, c)
	}
	waitFor(b, func() bool { return p.stats.ConnCount() == n })
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapInuse+after.StackInuse-before.HeapInuse-before.StackInuse)/float64(n), "B/conn")
	for _, c := range conns {
		c.Close()
	}
}
