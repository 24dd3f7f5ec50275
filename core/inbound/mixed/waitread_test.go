package mixed

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/relay"
	"github.com/skiffvpn/skiff/core/relay/relaytest"
	"github.com/skiffvpn/skiff/internal/nettest"
)

// relayHandler relays every stream to a TCP echo on bufs, and sends the
// relay's result to done.
type relayHandler struct {
	echo string
	bufs *relay.Buffers
	done chan error
}

func (h relayHandler) HandleStream(ctx context.Context, m flow.Metadata, accept func() (net.Conn, error)) error {
	up, err := net.Dial("tcp", h.echo)
	if err != nil {
		return err
	}
	app, err := accept()
	if err != nil {
		up.Close()
		return err
	}
	err = relay.Stream(ctx, h.bufs, app, up, nil, nil)
	h.done <- err
	return err
}

func (relayHandler) HandlePacket(context.Context, flow.Metadata, net.PacketConn) error {
	return nil
}

// TestIdleTunnelHoldsNoBuffer: an HTTP CONNECT tunnel that goes quiet
// after a bulk echo holds no relay buffer, also when the client sent
// bytes right behind its request (which the inbound's reader holds until
// the relay reads them), and the next bytes still come through.
func TestIdleTunnelHoldsNoBuffer(t *testing.T) {
	for _, early := range []string{"", "early bytes"} {
		t.Run("early="+early, func(t *testing.T) {
			h := relayHandler{echo: nettest.TCPEcho(t).String(), bufs: relay.NewBuffers(0), done: make(chan error, 1)}
			s, err := Listen(Config{Listen: "127.0.0.1:0"}, h)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			c, err := net.Dial("tcp", s.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.WriteString(c, "CONNECT echo.test:7 HTTP/1.1\r\nHost: echo.test:7\r\n\r\n"+early); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("CONNECT: %v, %v", resp, err)
			}
			got := make([]byte, len(early))
			if _, err := io.ReadFull(br, got); err != nil || string(got) != early {
				t.Fatalf("the early bytes' echo: %q, %v", got, err)
			}
			if br.Buffered() != 0 {
				t.Fatalf("%d bytes more than the echo", br.Buffered())
			}
			relaytest.IdleHoldsNoBuffer(t, relaytest.Started(c, h.bufs, h.done), nil)
		})
	}
}
