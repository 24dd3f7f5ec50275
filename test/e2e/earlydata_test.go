package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/test/harness"
)

// TestWebSocketEarlyData checks, by reading skiff's WebSocket upgrade
// request, that with ?ed=2048 the first write (the VLESS request) travels
// base64url-encoded in Sec-WebSocket-Protocol, and that without it the
// header is absent. A TLS-terminating recorder sits between skiff and a
// sing-box VLESS+WS server.
func TestWebSocketEarlyData(t *testing.T) {
	skipIfSingBoxClient(t)
	for _, ed := range []int{2048, 0} {
		t.Run("ed="+strconv.Itoa(ed), func(t *testing.T) {
			s := newServer(t, setup{kind: harness.VLESSWS, earlyData: ed})
			s.NoTLS = true
			startServer(t, s)
			heads := make(chan []byte, 4)
			rec := tlsRecorder(t, s.Cert, s.Addr(), heads)

			front := *s
			_, port, _ := net.SplitHostPort(rec)
			front.Port, _ = strconv.Atoi(port)
			_, proxy := startSkiff(t, s, front.Link(front.Trusting()))
			testTCPEcho(t, proxy, 64<<10)

			var head []byte
			select {
			case head = <-heads:
			case <-time.After(5 * time.Second):
				t.Fatal("no upgrade request reached the recorder")
			}
			req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(head)))
			if err != nil {
				t.Fatalf("upgrade request: %v\n%s", err, head)
			}
			if req.URL.Path != "/ws" || !strings.EqualFold(req.Header.Get("Upgrade"), "websocket") {
				t.Errorf("upgrade request %s %s, Upgrade %q; want GET /ws with Upgrade: websocket", req.Method, req.URL, req.Header.Get("Upgrade"))
			}
			proto := req.Header.Get("Sec-WebSocket-Protocol")
			if ed == 0 {
				if proto != "" {
					t.Errorf("Sec-WebSocket-Protocol %q sent without ?ed=", proto)
				}
				return
			}
			data, err := base64.RawURLEncoding.DecodeString(proto)
			if err != nil || len(data) < 17 {
				t.Fatalf("Sec-WebSocket-Protocol %q is not base64url early data (%v)", proto, err)
			}
			uuid, _ := hex.DecodeString(strings.ReplaceAll(s.UUID, "-", ""))
			if data[0] != 0 || !bytes.Equal(data[1:17], uuid) {
				t.Errorf("early data does not start with the VLESS request (version 0 and the UUID)")
			}
			if len(data) > ed {
				t.Errorf("early data is %d bytes, over ed=%d", len(data), ed)
			}
			t.Logf("early data: %d bytes in Sec-WebSocket-Protocol", len(data))
		})
	}
}

// tlsRecorder terminates TLS with cert on a loopback port, sends the head
// of each HTTP request it gets to heads, and relays the connection in clear
// to upstream. It returns its address.
func tlsRecorder(t *testing.T, cert *harness.Cert, upstream string, heads chan<- []byte) string {
	t.Helper()
	pair, err := tls.X509KeyPair(cert.CertPEM, cert.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{pair}, NextProtos: []string{"http/1.1"}}
	srv, err := harness.ServeTCP(func(c net.Conn) {
		tc := tls.Server(c, cfg)
		defer tc.Close()
		tc.SetDeadline(time.Now().Add(30 * time.Second))
		br := bufio.NewReader(tc)
		var head []byte
		for {
			line, err := br.ReadSlice('\n')
			if err != nil {
				return
			}
			head = append(head, line...)
			if len(line) <= 2 { // the blank line ends the head
				break
			}
		}
		select {
		case heads <- head:
		default:
		}
		up, err := net.Dial("tcp", upstream)
		if err != nil {
			return
		}
		defer up.Close()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		stop := context.AfterFunc(ctx, func() { up.Close(); tc.Close() })
		defer stop()
		if _, err := up.Write(head); err != nil {
			return
		}
		go func() {
			io.Copy(up, br)
			cancel()
		}()
		io.Copy(tc, up)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv.Addr()
}
