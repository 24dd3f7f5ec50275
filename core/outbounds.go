package core

import (
	"fmt"

	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/outbound"
	"github.com/skiffvpn/skiff/core/outbound/hysteria2"
	"github.com/skiffvpn/skiff/core/outbound/vless"
)

// NewOutbound returns the protocol client for n, opening its sockets with d.
// This is the one place where node protocols meet their implementations.
func NewOutbound(n *node.Node, d outbound.Dialer) (outbound.Outbound, error) {
	if err := n.Validate(); err != nil {
		return nil, fmt.Errorf("node %q: %w", n.Name, err)
	}
	switch n.Protocol {
	case node.Hysteria2:
		c, err := hysteria2.New(n, d)
		if err != nil {
			return nil, fmt.Errorf("node %q: %w", n.Name, err)
		}
		return c, nil
	case node.VLESS:
		c, err := vless.New(n, d)
		if err != nil {
			return nil, fmt.Errorf("node %q: %w", n.Name, err)
		}
		return c, nil
	default:
		return nil, fmt.Errorf("node %q: protocol %s is not supported yet", n.Name, n.Protocol)
	}
}
