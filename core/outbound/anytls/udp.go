package anytls

import (
	"context"
	"fmt"
	"net"
	"strings"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/outbound/internal/uot"
)

// uotVersion is the UDP over TCP version AnyTLS servers speak: sing-box's
// AnyTLS inbound serves version 2, as every sing-box inbound does.
const uotVersion = 2

// ListenPacket opens a UDP session: a stream to the UDP-over-TCP magic
// address (package uot, version 2), whose request (not connected, first
// destination dst) goes out with the first datagram.
func (c *Client) ListenPacket(ctx context.Context, dst flow.Addr) (net.PacketConn, error) {
	magic, _ := uot.Magic(uotVersion)
	st, err := c.open(ctx, magic)
	if err != nil {
		if strings.HasPrefix(err.Error(), "anytls: ") {
			return nil, err
		}
		return nil, fmt.Errorf("anytls: UDP to %s via %s: %w", dst, c.name, err)
	}
	pc, err := uot.NewPacketConn(st, uotVersion, dst, "anytls: UDP via "+c.name)
	if err != nil {
		st.Close()
		return nil, err
	}
	return pc, nil
}
