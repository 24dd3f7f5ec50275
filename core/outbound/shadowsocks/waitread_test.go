package shadowsocks

import (
	"context"
	"testing"

	"github.com/skiffvpn/skiff/core/relay/relaytest"
)

// TestIdleStreamHoldsNoBuffer checks that a relayed stream that goes quiet
// after a bulk echo holds no read buffer, neither the stream's own nor the
// relay's (WaitRead), and that the next bytes still come through.
func TestIdleStreamHoldsNoBuffer(t *testing.T) {
	s, pw := newTestServer(t, "2022-blake3-aes-128-gcm", false)
	n, _, _ := listen(t, s, pw)
	c := newClient(t, n)
	up, err := c.DialContext(context.Background(), "tcp", testDst)
	if err != nil {
		t.Fatal(err)
	}
	sc := up.(halfCloser).streamConn
	relaytest.IdleHoldsNoBuffer(t, relaytest.Relay(t, up), func() (bool, string) {
		sc.rmu.Lock()
		defer sc.rmu.Unlock()
		return sc.rbuf != nil, "(its read buffer)"
	})
}
