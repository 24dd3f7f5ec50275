package subscription

import (
	"fmt"

	"github.com/skiffvpn/skiff/core/node"
)

// Supported reports whether Skiff can dial n today and, when it cannot, a
// short reason for the user. It is the one place that knows which protocols
// and options the engine implements: update it as outbounds land.
func Supported(n *node.Node) (ok bool, reason string) {
	if n == nil {
		return false, "no node"
	}
	switch n.Protocol {
	case node.Hysteria2:
		return true, ""
	case node.VLESS:
		if n.VLESS != nil && n.VLESS.Flow != "" {
			return false, fmt.Sprintf("VLESS flow %q is not supported yet", n.VLESS.Flow)
		}
		if n.VLESS != nil && n.VLESS.Encryption != "" && n.VLESS.Encryption != "none" {
			return false, "VLESS encryption other than none is not supported yet"
		}
		if n.TLS != nil && n.TLS.Reality != nil {
			return false, "VLESS with REALITY is not supported yet"
		}
		if t := n.Transport; t != nil && t.Type != node.TransportTCP && t.Type != node.TransportWS {
			return false, fmt.Sprintf("VLESS over the %s transport is not supported yet", t.Type)
		}
		return true, ""
	case node.VMess, node.Shadowsocks, node.Trojan, node.TUIC, node.AnyTLS:
		return false, fmt.Sprintf("the %s protocol is not supported yet", n.Protocol)
	}
	return false, fmt.Sprintf("unknown protocol %q", n.Protocol)
}
