package mixed

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
)

// scriptConn is a client conn that sends a fixed script and records what
// the server writes back: the inbound's whole parsing path runs on it with
// no network.
type scriptConn struct {
	r  *bytes.Reader
	mu sync.Mutex
	w  bytes.Buffer
}

func newScriptConn(b []byte) *scriptConn { return &scriptConn{r: bytes.NewReader(b)} }

func (c *scriptConn) Read(p []byte) (int, error) { return c.r.Read(p) }
func (c *scriptConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.w.Write(p)
}
func (c *scriptConn) written() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Clone(c.w.Bytes())
}
func (c *scriptConn) Close() error { return nil }

// LocalAddr is not a TCP address, so UDP ASSOCIATE fails before it opens
// a socket.
func (c *scriptConn) LocalAddr() net.Addr { return scriptAddr{} }
func (c *scriptConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}
}
func (c *scriptConn) SetDeadline(time.Time) error      { return nil }
func (c *scriptConn) SetReadDeadline(time.Time) error  { return nil }
func (c *scriptConn) SetWriteDeadline(time.Time) error { return nil }

type scriptAddr struct{}

func (scriptAddr) Network() string { return "script" }
func (scriptAddr) String() string  { return "script" }

// echoHandler accepts every stream. A CONNECT tunnel's bytes are read to
// the end and kept; a forwarded plain request is answered with 204.
type echoHandler struct {
	mu      sync.Mutex
	dsts    []flow.Addr
	tunnels [][]byte
}

func (h *echoHandler) HandleStream(_ context.Context, m flow.Metadata, accept func() (net.Conn, error)) error {
	h.mu.Lock()
	h.dsts = append(h.dsts, m.Destination)
	h.mu.Unlock()
	c, err := accept()
	if err != nil {
		return err
	}
	defer c.Close()
	if _, ok := c.(halfClosePipe); ok {
		// The server of forwarded requests: 204 to each, keeping the
		// connection until the inbound is done with its client and the
		// Transport closes its end (CloseIdleConnections).
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return nil
			}
			io.Copy(io.Discard, req.Body)
			if _, err := io.WriteString(c, "HTTP/1.1 204 No Content\r\n\r\n"); err != nil {
				return nil
			}
		}
	}
	rest, _ := io.ReadAll(c)
	h.mu.Lock()
	h.tunnels = append(h.tunnels, rest)
	h.mu.Unlock()
	return nil
}

func (h *echoHandler) HandlePacket(_ context.Context, _ flow.Metadata, conn net.PacketConn) error {
	return conn.Close()
}

// serveScript runs one client conn through the inbound and returns what
// was written back and what the handler saw. It fails the test when the
// inbound does not finish within 10 s.
func serveScript(t testing.TB, script []byte) ([]byte, *echoHandler) {
	t.Helper()
	return serveScriptWith(t, script, nil)
}

// serveScriptWith is serveScript with an inbound that asks for auth.
func serveScriptWith(t testing.TB, script []byte, auth *Auth) ([]byte, *echoHandler) {
	t.Helper()
	h := &echoHandler{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := &Server{h: h, auth: newAuthCheck(auth), log: slog.New(slog.DiscardHandler), ctx: ctx, cancel: cancel}
	c := newScriptConn(script)
	done := make(chan struct{})
	go func() {
		s.handle(c)
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("the inbound hangs on %q", script)
	}
	return c.written(), h
}

// FuzzServe feeds arbitrary client bytes to the mixed inbound: SOCKS5
// greeting and request, or an HTTP proxy request. It must never panic or
// hang; every destination handed on is a usable address; the answer is a
// SOCKS5 reply or an HTTP response; and a tunnel gets exactly the bytes the
// client sent after its request, none lost or taken by the parser.
func FuzzServe(f *testing.F) {
	socks := func(req ...[]byte) []byte {
		b := []byte{socksVersion, 1, methodNoAuth}
		for _, r := range req {
			b = append(b, r...)
		}
		return b
	}
	connect := func(a flow.Addr) []byte {
		return appendSOCKSAddr([]byte{socksVersion, cmdConnect, 0}, a)
	}
	for _, seed := range [][]byte{
		socks(connect(flow.Addr{IP: netip.MustParseAddr("192.0.2.1"), Port: 443}), []byte("hello")),
		socks(connect(flow.Addr{IP: netip.MustParseAddr("2001:db8::1"), Port: 80})),
		socks(connect(flow.Addr{Name: "example.com", Port: 443}), []byte("\x16\x03\x01")),
		socks(connect(flow.Addr{Name: strings.Repeat("a", 255), Port: 1})),
		socks(appendSOCKSAddr([]byte{socksVersion, cmdUDPAssociate, 0}, flow.Addr{IP: netip.IPv4Unspecified()})),
		socks(appendSOCKSAddr([]byte{socksVersion, cmdBind, 0}, flow.Addr{IP: netip.IPv4Unspecified()})),
		{socksVersion, 2, 1, 2},
		{socksVersion, 0},
		{4, 1, 0, 80, 127, 0, 0, 1, 0},
		[]byte("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\ntunnel bytes"),
		[]byte("CONNECT [2001:db8::1] HTTP/1.1\r\n\r\n"),
		[]byte("GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\nConnection: keep-alive\r\n\r\n"),
		[]byte("POST http://example.com:8080/x HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc"),
		[]byte("GET /relative HTTP/1.1\r\nHost: example.com\r\n\r\n"),
		[]byte("GET http://example.com/ HTTP/1.1\r\nX: " + strings.Repeat("y", 3000)),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, script []byte) {
		out, h := serveScript(t, script)
		for _, d := range h.dsts {
			if !d.IsValid() {
				t.Fatalf("destination %+v handed on", d)
			}
		}
		for _, rest := range h.tunnels {
			if !bytes.HasSuffix(script, rest) {
				t.Fatalf("tunnel got %q, not what followed the request in %q", rest, script)
			}
		}
		if len(script) == 0 || len(out) == 0 {
			return
		}
		switch script[0] {
		case socksVersion:
			if out[0] != socksVersion {
				t.Fatalf("SOCKS client answered %q", out)
			}
		case 4:
			t.Fatalf("SOCKS4 client answered %q", out)
		default:
			if !bytes.HasPrefix(out, []byte("HTTP/1.1 ")) {
				t.Fatalf("HTTP client answered %q", out)
			}
		}
	})
}

// TestHTTPHeadLimit sends request heads around the limit. With a client
// that sends everything at once, the limit lets through maxRequestHead
// bytes plus the 2 KiB the first read buffered.
func TestHTTPHeadLimit(t *testing.T) {
	const max = maxRequestHead + 2048
	head := func(n int) []byte {
		const start, end = "GET http://example.com/ HTTP/1.1\r\nX-Pad: ", "\r\n\r\n"
		if n < len(start)+len(end) {
			t.Fatalf("head of %d bytes cannot be built", n)
		}
		return []byte(start + strings.Repeat("p", n-len(start)-len(end)) + end)
	}
	for _, tc := range []struct {
		name   string
		script []byte
		status string
	}{
		{"smallest", []byte("GET http://example.com/ HTTP/1.1\r\n\r\n"), "204"},
		{"one byte", []byte("G"), "400"},
		{"max-1", head(max - 1), "204"},
		{"max", head(max), "204"},
		{"max+1", head(max + 1), "431"},
		{"endless line", []byte("GET http://example.com/ HTTP/1.1\r\nX: " + strings.Repeat("y", 3<<20)), "431"},
		{"truncated", head(max)[:max-2], "400"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _ := serveScript(t, tc.script)
			if want := "HTTP/1.1 " + tc.status + " "; !bytes.HasPrefix(out, []byte(want)) {
				t.Errorf("answered %.200q; want %q", out, want)
			}
		})
	}
	// A keep-alive client's second request is held to the same limit.
	two := append([]byte("GET http://example.com/ HTTP/1.1\r\n\r\n"), head(max+maxRequestHead)...)
	out, _ := serveScript(t, two)
	if !bytes.HasPrefix(out, []byte("HTTP/1.1 204 ")) || !bytes.Contains(out, []byte("\r\n\r\nHTTP/1.1 431 ")) {
		t.Errorf("keep-alive client with a second head over the limit answered %.200q; want 204, then 431", out)
	}
}

// FuzzSOCKSUDPHeader feeds two datagrams to the UDP association's header
// parser (the second one exercises the cache of the last destination): it
// must never panic or claim more bytes than the datagram has, and what it
// returns, cached or not, is what the plain address parser reads.
func FuzzSOCKSUDPHeader(f *testing.F) {
	name := appendSOCKSAddr([]byte{0, 0, 0}, flow.Addr{Name: "dns.example", Port: 53})
	ip := appendSOCKSAddr([]byte{0, 0, 0}, flow.Addr{IP: netip.MustParseAddr("192.0.2.1"), Port: 53})
	for _, seed := range [][2][]byte{
		{name, name},
		{append(bytes.Clone(name), "query"...), append(bytes.Clone(name), "again"...)},
		{ip, name},
		{name, appendSOCKSAddr([]byte{0, 0, 0}, flow.Addr{Name: "dns.example", Port: 54})},
		{{0, 0, 1, atypIPv4, 1, 2, 3, 4, 0, 53}, {0, 0}},
		{{0, 0, 0, atypDomain, 255}, {0, 0, 0, atypDomain, 0, 0, 0}},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		var c socksPacketConn
		for _, d := range [][]byte{a, b} {
			dst, hl, err := c.parseHeader(d)
			if err != nil {
				continue
			}
			if hl > len(d) || hl < 4 {
				t.Fatalf("header of %d bytes in a %d-byte datagram", hl, len(d))
			}
			want, n, err := parseSOCKSAddr(d[3:])
			if err != nil || 3+n != hl || dst.(flow.Addr) != want {
				t.Fatalf("parseHeader(%x) = %v, %d; parseSOCKSAddr = %+v, %d, %v", d, dst, hl, want, n, err)
			}
		}
	})
}
