package nettest

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
)

// StreamSpec is the transport of a StreamServer: plain TCP, TLS, and
// WebSocket (on Path) over either.
type StreamSpec struct {
	TLS  bool
	WS   bool
	Path string // WebSocket path; empty: "/"
}

// StreamServer starts a server on 127.0.0.1 speaking spec's transport and
// runs handle on each connection's byte stream (for WebSocket, the
// payload of the client's messages; each of handle's writes is one binary
// message). With TLS it serves a SelfSigned certificate for name and
// returns its pin. The connection is closed when handle returns; all is
// stopped at cleanup.
func StreamServer(tb testing.TB, spec StreamSpec, name string, handle func(rw io.ReadWriter)) (addr netip.AddrPort, pin string) {
	tb.Helper()
	cert, pin := SelfSigned(tb, name)
	tcfg := &tls.Config{Certificates: []tls.Certificate{cert}}
	if spec.WS {
		path := spec.Path
		if path == "" {
			path = "/"
		}
		ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != path {
				http.NotFound(w, r)
				return
			}
			conn, _, _, err := ws.UpgradeHTTP(r, w)
			if err != nil {
				return
			}
			defer conn.Close()
			handle(&wsStream{c: conn})
		}))
		if spec.TLS {
			ts.TLS = tcfg
			ts.StartTLS()
		} else {
			ts.Start()
		}
		tb.Cleanup(ts.Close)
		return netip.MustParseAddrPort(ts.Listener.Addr().String()), pin
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("nettest: stream server: %v", err)
	}
	addr = ln.Addr().(*net.TCPAddr).AddrPort()
	if spec.TLS {
		ln = tls.NewListener(ln, tcfg)
	}
	Serve(tb, ln, func(c net.Conn) { handle(c) })
	return addr, pin
}

// wsStream is the server's side of a WebSocket as a byte stream.
type wsStream struct {
	c   net.Conn
	pre []byte
}

func (s *wsStream) Read(p []byte) (int, error) {
	for len(s.pre) == 0 {
		msg, _, err := wsutil.ReadClientData(s.c)
		if err != nil {
			return 0, err
		}
		s.pre = msg
	}
	n := copy(p, s.pre)
	s.pre = s.pre[n:]
	return n, nil
}

func (s *wsStream) Write(p []byte) (int, error) {
	return len(p), wsutil.WriteServerBinary(s.c, p)
}
