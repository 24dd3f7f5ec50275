package core

import (
	"context"
	"time"

	"github.com/skiffvpn/skiff/core/group"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/outbound"
	"github.com/skiffvpn/skiff/core/protocol"
)

// ProbeTimeout bounds one latency test.
const ProbeTimeout = 5 * time.Second

// Probe measures n's latency: the round trip of an HTTP request to url
// ("": the default probe URL) through n's own outbound, built for the test
// and closed after it. In TUN mode its sockets bypass the tunnel, so the
// test measures the server, not the route through another one.
func (c *Controller) Probe(ctx context.Context, n *node.Node, url string) (time.Duration, error) {
	if url == "" {
		url = group.DefaultPolicy().ProbeURL
	}
	var d outbound.Dialer
	if r := c.current(); r != nil && r.tun != nil && r.tun.tunnel != nil {
		d = r.tun.tunnel.Dialer()
	}
	if d == nil {
		d = &outbound.SystemDialer{}
	}
	ob, err := protocol.NewOutbound(n, d)
	if err != nil {
		return 0, err
	}
	defer ob.Close()
	return group.Probe(ctx, ob, url, ProbeTimeout)
}
