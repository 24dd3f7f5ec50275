// Package protocol is the one place where a node's protocol meets its
// implementation: NewOutbound builds a node's client, Supported says
// whether Skiff can dial a node and why not. It is a leaf: the engine
// (package core) and the data packages (core/subscription, core/plan)
// import it, never the other way round.
package protocol

import (
	"errors"
	"fmt"
	"strings"

	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/outbound"
	"github.com/skiffvpn/skiff/core/outbound/anytls"
	"github.com/skiffvpn/skiff/core/outbound/hysteria"
	"github.com/skiffvpn/skiff/core/outbound/hysteria2"
	"github.com/skiffvpn/skiff/core/outbound/shadowsocks"
	"github.com/skiffvpn/skiff/core/outbound/ssh"
	"github.com/skiffvpn/skiff/core/outbound/trojan"
	"github.com/skiffvpn/skiff/core/outbound/tuic"
	"github.com/skiffvpn/skiff/core/outbound/vless"
	"github.com/skiffvpn/skiff/core/outbound/vmess"
	"github.com/skiffvpn/skiff/core/outbound/wireguard"
)

// clients holds each protocol's constructor.
var clients = map[string]func(*node.Node, outbound.Dialer) (outbound.Outbound, error){
	node.Hysteria2:   client(hysteria2.New),
	node.VLESS:       client(vless.New),
	node.Shadowsocks: client(shadowsocks.New),
	node.VMess:       client(vmess.New),
	node.Trojan:      client(trojan.New),
	node.AnyTLS:      client(anytls.New),
	node.TUIC:        client(tuic.New),
	node.SSH:         client(ssh.New),
	node.WireGuard:   client(wireguard.New),
	node.Hysteria:    client(hysteria.New),
}

// client makes a protocol's New return an outbound.Outbound (and a nil one
// on error, not a nil *Client in an interface).
func client[C outbound.Outbound](newClient func(*node.Node, outbound.Dialer) (C, error)) func(*node.Node, outbound.Dialer) (outbound.Outbound, error) {
	return func(n *node.Node, d outbound.Dialer) (outbound.Outbound, error) {
		c, err := newClient(n, d)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
}

// NewOutbound returns the protocol client for n, opening its sockets with d.
// This is the one place where node protocols meet their implementations.
func NewOutbound(n *node.Node, d outbound.Dialer) (outbound.Outbound, error) {
	if err := n.Validate(); err != nil {
		return nil, fmt.Errorf("node %q: %w", n.Name, err)
	}
	newClient, ok := clients[n.Protocol]
	if !ok {
		return nil, node.Unsupportedf(node.FeatureProtocol, n.Protocol, "node %q: the %s protocol is not supported yet", n.Name, n.Protocol)
	}
	var c outbound.Outbound
	var err error
	if n.Multiplex != "" {
		c, err = newMuxed(n, d, newClient)
	} else {
		c, err = newClient(n, d)
	}
	if err != nil {
		return nil, fmt.Errorf("node %q: %w", n.Name, err)
	}
	return c, nil
}

// Supported reports whether Skiff can dial n, and if not, why, in plain
// words for the node list. It asks the protocol's own constructor (which
// opens nothing), so that what the list says and what a run does never
// disagree.
func Supported(n *node.Node) (ok bool, reason string) {
	reason, _ = Unusable(n)
	return reason == "", reason
}

// Unusable says why Skiff cannot dial n: in English for the node list's
// details, logs and the CLI, and as data for front ends that say it in
// their own words. A node whose settings are wrong rather than
// unsupported has no Lack. It returns "", nil for a node Skiff can dial.
func Unusable(n *node.Node) (reason string, lack *node.Lack) {
	if n == nil {
		return "no node", nil
	}
	ob, err := NewOutbound(n, nil)
	if err != nil {
		var u *node.UnsupportedError
		if errors.As(err, &u) {
			lack = &u.Lack
		}
		return unsupportedReason(n, err), lack
	}
	ob.Close()
	return "", nil
}

// unsupportedReason strips the node's name and server from a constructor's
// error, which the list shows beside them anyway.
func unsupportedReason(n *node.Node, err error) string {
	msg := err.Error()
	for _, prefix := range []string{fmt.Sprintf("node %q: ", n.Name), n.Protocol + ": " + n.Address() + ": ", n.Protocol + ": "} {
		msg = strings.TrimPrefix(msg, prefix)
	}
	return msg
}
