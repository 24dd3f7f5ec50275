package protocol

import (
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/outbound"
	"github.com/skiffvpn/skiff/core/outbound/mux"
)

// muxProtocols are the protocols whose sing-box outbounds take multiplex
// and Skiff carries it over. Shadowsocks is not among them yet: sing-box's
// server sends empty chunks on a multiplexed stream, which Skiff's
// Shadowsocks client refuses ("chunk of 0 bytes"), so flows after the
// first failed (seen against sing-box v1.14.1, 2022-blake3-aes-128-gcm).
var muxProtocols = map[string]bool{node.VLESS: true, node.VMess: true, node.Trojan: true}

// newMuxed returns n's client with its multiplex: the protocol's own
// client for n without it, carrying the sessions (core/outbound/mux).
func newMuxed(n *node.Node, d outbound.Dialer, newClient func(*node.Node, outbound.Dialer) (outbound.Outbound, error)) (outbound.Outbound, error) {
	if !muxProtocols[n.Protocol] {
		return nil, node.Unsupportedf(node.FeatureMultiplex, n.Multiplex, "multiplex %q is not supported with %s yet", n.Multiplex, n.Protocol)
	}
	if n.VLESS != nil && n.VLESS.Flow != "" {
		// sing-box refuses it too: Vision's padding works on the TLS
		// records of one flow, not of a session's many.
		return nil, node.Unsupportedf(node.FeatureMultiplex, n.Multiplex, "multiplex cannot go with flow %s", n.VLESS.Flow)
	}
	cfg, err := mux.ParseConfig(n.Multiplex, n.MultiplexOptions)
	if err != nil {
		return nil, err
	}
	inner := *n
	inner.Multiplex, inner.MultiplexOptions = "", nil
	c, err := newClient(&inner, d)
	if err != nil {
		return nil, err
	}
	return mux.New(c, cfg, n.Protocol+": "+n.Address()), nil
}
