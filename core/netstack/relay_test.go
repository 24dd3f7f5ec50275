package netstack

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/netip"
	"runtime"
	"strings"
	"testing"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/relay"
	"github.com/skiffvpn/skiff/internal/nettest"
)

// relayHandler relays each TCP flow to a TCP server as the engine does
// (relay.Stream), under a context the test can cancel, as the connection
// table's close does: it receives each flow's cancel, and then the flow's
// result.
type relayHandler struct {
	up     netip.AddrPort
	bufs   *relay.Buffers
	cancel chan context.CancelFunc
	ends   chan error
}

func (h *relayHandler) HandleStream(ctx context.Context, m flow.Metadata, accept func() (net.Conn, error)) error {
	up, err := net.Dial("tcp", h.up.String())
	if err != nil {
		return err
	}
	app, err := accept()
	if err != nil {
		up.Close()
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	select { // a test that does not take it does not hold the flow
	case h.cancel <- cancel:
	default:
	}
	err = relay.Stream(ctx, h.bufs, app, up, nil, nil)
	select {
	case h.ends <- err:
	default:
	}
	return err
}

// newRelayHandler returns a relayHandler to a TCP echo server.
func newRelayHandler(t *testing.T) *relayHandler {
	return &relayHandler{up: nettest.TCPEcho(t), bufs: relay.NewBuffers(0),
		cancel: make(chan context.CancelFunc, 1), ends: make(chan error, 1)}
}

func (h *relayHandler) HandlePacket(ctx context.Context, m flow.Metadata, conn net.PacketConn) error {
	return conn.Close()
}

// uploadGoroutines counts the goroutines that run a relay direction of
// their own: the upload one of each flow, the download one runs on the
// flow's goroutine.
func uploadGoroutines() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		if bytes.Contains(g, []byte("relay.(*half).run")) {
			n++
		}
	}
	return n
}

// TestIdleFlowHoldsNoUploadGoroutine checks that a TUN flow whose app is
// quiet holds no goroutine (nor buffer) for its upload direction, and
// that bytes after the quiet still go both ways, up to the end of the
// flow however it comes: the app's half-close, its close, or the engine
// stopping the flow.
func TestIdleFlowHoldsNoUploadGoroutine(t *testing.T) {
	h := newRelayHandler(t)
	app := newStackWith(t, h, Options{})

	idle := func(t *testing.T, what string) {
		t.Helper()
		nettest.Eventually(t, "no upload goroutine "+what, func() (bool, string) {
			n := uploadGoroutines()
			return n == 0 && h.bufs.Held() == 0, "goroutines " + strings.Repeat("|", n)
		})
	}
	echo := func(t *testing.T, a net.Conn, msg string) {
		t.Helper()
		if _, err := a.Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
		b := make([]byte, len(msg))
		if _, err := io.ReadFull(a, b); err != nil || string(b) != msg {
			t.Fatalf("echo: %q, %v; want %q", b, err, msg)
		}
	}

	for _, tc := range []struct {
		name string
		end  func(a net.Conn, cancel context.CancelFunc)
		want string // what the app reads after the end: "EOF", or "" for any error or EOF
	}{
		{"the app half-closes", func(a net.Conn, _ context.CancelFunc) { a.(interface{ CloseWrite() error }).CloseWrite() }, "EOF"},
		{"the app closes", func(a net.Conn, _ context.CancelFunc) { a.Close() }, ""},
		{"the engine stops the flow", func(_ net.Conn, cancel context.CancelFunc) { cancel() }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := app.DialContextTCPAddrPort(context.Background(), netip.AddrPortFrom(remote4, 443))
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			cancel := <-h.cancel
			echo(t, a, "hello")
			idle(t, "after the first bytes")
			// A bulk write makes the upload direction grow its buffer
			// and read without waiting; quiet again, it holds neither.
			big := bytes.Repeat([]byte("x"), 1<<20)
			go a.Write(big)
			if _, err := io.ReadFull(a, make([]byte, len(big))); err != nil {
				t.Fatalf("echo of 1 MiB: %v", err)
			}
			idle(t, "after a bulk transfer")
			echo(t, a, "again")
			idle(t, "after the bytes after the quiet")

			tc.end(a, cancel)
			if err := <-h.ends; err != nil && tc.name != "the engine stops the flow" {
				t.Errorf("relay.Stream: %v", err)
			}
			if tc.want == "EOF" {
				if n, err := a.Read(make([]byte, 1)); n != 0 || err != io.EOF {
					t.Errorf("the app's read after its half-close: %d, %v; want EOF", n, err)
				}
			}
			idle(t, "after the flow ended")
		})
	}
}
