package shadowsocks

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/outbound/internal/muxcool"
	"github.com/skiffvpn/skiff/core/transport/readwait"
	"github.com/skiffvpn/skiff/internal/nettest"
)

// TestPluginReadWaiters checks the plugins' layers over a TCP socket: they
// wait on it once their handshake is read (WaitRead), read what has
// arrived of their payload without waiting (TryRead), and leave a frame's
// or record's header to Read.
func TestPluginReadWaiters(t *testing.T) {
	muxFrame := func(data string) []byte {
		b, _ := appendMuxMeta(nil, muxcool.StatusKeep, muxcool.OptData, testDst)
		b = binary.BigEndian.AppendUint16(b, uint16(len(data)))
		return append(b, data...)
	}
	tlsRecord := func(typ byte, data string) []byte {
		return append([]byte{typ, 3, 3, byte(len(data) >> 8), byte(len(data))}, data...)
	}
	for _, tc := range []struct {
		name  string
		wrap  func(net.Conn) net.Conn
		start []byte // the server's handshake and first data, "first"
		more  []byte // then the payload "more" in one frame
		next  []byte // then another frame, whose header TryRead leaves to Read
		// whole: TryRead reads the next frame too (no framing after the
		// handshake).
		whole bool
	}{
		{
			name:  "obfs-http",
			wrap:  func(c net.Conn) net.Conn { return newObfsHTTPConn(c, &obfsConfig{host: "example.com", uri: "/"}) },
			start: []byte("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\nfirst"),
			more:  []byte("more"),
			next:  []byte("next"),
			whole: true,
		},
		{
			name: "obfs-tls",
			wrap: func(c net.Conn) net.Conn { return newObfsTLSConn(c, "example.com") },
			start: append(append(tlsRecord(recHandshake, "hello"), tlsRecord(recCCS, "\x01")...),
				tlsRecord(recHandshake, "first")...),
			more: tlsRecord(recAppData, "more"),
			next: tlsRecord(recAppData, "next"),
		},
		{
			name:  "mux",
			wrap:  func(c net.Conn) net.Conn { return newMuxConn(c, testDst) },
			start: muxFrame("first"),
			more:  muxFrame("more"),
			next:  muxFrame("next"),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, server := socketPair(t)
			c := tc.wrap(raw)
			c.SetDeadline(time.Now().Add(10 * time.Second))
			w, tr := readwait.For(c)
			if w == nil || tr == nil {
				t.Fatalf("For(%T over a socket) = %v, %v; want both", c, w, tr)
			}
			server.Write(tc.start)
			b := make([]byte, 100)
			if n, err := io.ReadAtLeast(c, b, 5); err != nil || string(b[:n]) != "first" {
				t.Fatalf("first Read: %q, %v", b[:n], err)
			}
			if n, err := tr.TryRead(b); n != 0 || err != nil {
				t.Fatalf("TryRead of a quiet conn: %d, %v", n, err)
			}
			w2 := nettest.StartWait(t, w.WaitRead)
			w2.Blocked("before the server sent more")
			server.Write(tc.more)
			w2.Ends("the server's next bytes")
			// A Read of one byte takes the frame's header; TryRead the
			// rest of its payload once it is there.
			if n, err := c.Read(b[:1]); n != 1 || err != nil || b[0] != 'm' {
				t.Fatalf("Read of one byte: %q, %v", b[:n], err)
			}
			server.Write(tc.next)
			want := "ore"
			if tc.whole {
				want = "orenext"
			}
			var got []byte
			nettest.Eventually(t, "the frame's payload", func() (bool, string) {
				n, err := tr.TryRead(b)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, b[:n]...)
				return string(got) == want, string(got)
			})
			if !tc.whole {
				if n, _ := tr.TryRead(b); n != 0 {
					t.Fatalf("TryRead read %q past the frame", b[:n])
				}
				if n, err := io.ReadAtLeast(c, b, 4); err != nil || string(b[:n]) != "next" {
					t.Fatalf("Read of the next frame: %q, %v", b[:n], err)
				}
			}
		})
	}
}

// socketPair returns the two ends of a loopback TCP connection.
func socketPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}
