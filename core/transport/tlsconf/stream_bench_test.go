package tlsconf

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"testing"

	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/internal/nettest"
)

// benchFingerprints are the ClientHellos whose cost the benchmarks
// compare: "go" is crypto/tls.
var benchFingerprints = []string{"go", "chrome", "firefox", "safari", "ios", "edge", "randomized"}

func benchServer(b *testing.B, handle func(net.Conn)) string {
	cert, _ := nettest.SelfSigned(b, "tlsconf.test")
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, SessionTicketsDisabled: true})
	if err != nil {
		b.Fatal(err)
	}
	nettest.Serve(b, ln, handle)
	return ln.Addr().String()
}

func benchStream(b *testing.B, fp string) *Stream {
	t := &node.TLS{Insecure: true}
	if fp != "go" {
		t.Fingerprint = fp
	}
	s, err := NewStream(t, "tlsconf.test")
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkHandshake: a full TLS 1.3 handshake over loopback TCP per
// iteration (no resumption: the server issues no tickets), for each
// ClientHello.
//
//	go test ./core/transport/tlsconf -run XXX -bench Handshake -count 5
func BenchmarkHandshake(b *testing.B) {
	addr := benchServer(b, func(c net.Conn) { c.(*tls.Conn).Handshake(); c.Read(make([]byte, 1)) })
	for _, fp := range benchFingerprints {
		b.Run(fp, func(b *testing.B) {
			s := benchStream(b, fp)
			b.ReportAllocs()
			for b.Loop() {
				benchDial(b, s, addr).Close()
			}
		})
	}
}

// BenchmarkBulk: client-to-server throughput through one connection in
// 32 KiB writes, for each ClientHello (the record layer is the same code
// in both engines; this shows whether it costs the same).
//
//	go test ./core/transport/tlsconf -run XXX -bench Bulk -count 5
func BenchmarkBulk(b *testing.B) {
	addr := benchServer(b, func(c net.Conn) { io.Copy(io.Discard, c) })
	buf := make([]byte, 32<<10)
	for _, fp := range benchFingerprints {
		b.Run(fp, func(b *testing.B) {
			c := benchDial(b, benchStream(b, fp), addr)
			defer c.Close()
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Write(buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchDial connects to addr and runs s's handshake.
func benchDial(b *testing.B, s *Stream, addr string) *Conn {
	raw, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	c, err := s.Client(context.Background(), raw)
	if err != nil {
		b.Fatal(err)
	}
	return c
}
