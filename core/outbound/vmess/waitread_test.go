package vmess

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/relay"
	"github.com/skiffvpn/skiff/internal/nettest"
)

// TestIdleStreamHoldsNoBuffer checks that a relayed VMess stream that goes
// quiet after a bulk echo holds no read buffer, neither the stream's own
// nor the relay's (WaitRead), and that the next bytes still come through.
func TestIdleStreamHoldsNoBuffer(t *testing.T) {
	for _, sp := range specs {
		t.Run(sp.name, func(t *testing.T) {
			s := startServer(t, sp.spec)
			c := newClient(t, s.node(sp.spec, "aes-128-gcm", false))
			up, err := c.DialContext(ctxT(t), "tcp", flow.Addr{Name: "echo.example", Port: 7})
			if err != nil {
				t.Fatal(err)
			}
			defer up.Close()
			vc := up.(*conn)
			app, appRelay := net.Pipe()
			defer app.Close()
			bs := relay.NewBuffers(0)
			done := make(chan error, 1)
			go func() { done <- relay.Stream(context.Background(), bs, appRelay, up, nil, nil) }()
			echo := func(data []byte) {
				t.Helper()
				go app.Write(data)
				got := make([]byte, len(data))
				if _, err := io.ReadFull(app, got); err != nil || !bytes.Equal(got, data) {
					t.Fatalf("echo: %v", err)
				}
			}
			idle := func(what string) {
				t.Helper()
				nettest.Eventually(t, what, func() (bool, string) {
					vc.rmu.Lock()
					own := vc.buf != nil
					vc.rmu.Unlock()
					// net.Pipe cannot wait: the upload direction holds one.
					return !own && bs.Held() <= 1, fmt.Sprintf("stream buffer held %v, relay buffers held %d", own, bs.Held())
				})
			}
			echo(bytes.Repeat([]byte("0123456789abcdef"), 64<<10))
			idle("after a 1 MiB echo")
			echo([]byte("next"))
			idle("idle again")
			app.Close()
			<-done
		})
	}
}
