package vmess

import (
	"testing"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/relay/relaytest"
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
			vc := up.(*conn)
			relaytest.IdleHoldsNoBuffer(t, relaytest.Relay(t, up), func() (bool, string) {
				vc.rmu.Lock()
				defer vc.rmu.Unlock()
				return vc.buf != nil, "(its read buffer)"
			})
		})
	}
}
