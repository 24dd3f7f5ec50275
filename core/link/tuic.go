package link

import (
	"strconv"
	"strings"
	"time"

	"github.com/skiffvpn/skiff/core/node"
)

// parseTUIC reads tuic://uuid:password@host:port?congestion_control=bbr&
// udp_relay_mode=native&alpn=h3&sni=…&allow_insecure=1#name, the TUIC v5
// link that sing-box, mihomo, v2rayN and NekoBox write.
func parseTUIC(u *uri) (*node.Node, error) {
	s := u.scheme
	if !u.hasUser {
		return nil, errf(s, "uuid", "missing")
	}
	rawID, password, _ := strings.Cut(u.user, ":")
	id, err := checkUUID(s, rawID)
	if err != nil {
		return nil, err
	}
	if password, err = linkPassword(s, password, u.query); err != nil {
		return nil, err
	}
	port, err := parsePort(s, u.port, 0)
	if err != nil {
		return nil, err
	}
	q := u.query
	o := &node.TUICOptions{UUID: id, Password: password}
	switch cc := q.get("congestion_control", "congestion_controller", "congestion-controller"); cc {
	case "", "cubic", "new_reno", "bbr":
		o.CongestionControl = cc
	default:
		return nil, refuse(s, "congestion_control", "unsupported", cc)
	}
	switch m := q.get("udp_relay_mode", "udp-relay-mode"); m {
	case "", "native", "quic":
		o.UDPRelayMode = m
	default:
		return nil, refuse(s, "udp_relay_mode", "unsupported", m)
	}
	if o.ZeroRTT, err = q.boolean(s, "reduce_rtt", "zero_rtt_handshake", "zero_rtt"); err != nil {
		return nil, err
	}
	if hb := q.get("heartbeat", "heartbeat_interval"); hb != "" {
		d, err := time.ParseDuration(hb)
		if err != nil {
			ms, err2 := strconv.ParseUint(hb, 10, 32) // milliseconds, as Clash writes it
			if err2 != nil {
				return nil, refuse(s, "heartbeat", "not a duration", hb)
			}
			d = time.Duration(ms) * time.Millisecond
		}
		if d < 0 {
			return nil, refuse(s, "heartbeat", "negative", hb)
		}
		o.Heartbeat = d
	}
	t, err := quicTLS(s, q)
	if err != nil {
		return nil, err
	}
	noSNI, err := q.boolean(s, "disable_sni", "disable-sni")
	if err != nil {
		return nil, err
	}
	if noSNI {
		if t == nil {
			t = &node.TLS{}
		}
		t.NoSNI = true
	}
	return &node.Node{Name: u.name(), Protocol: node.TUIC, Server: u.host, Port: port, TLS: t, TUIC: o}, nil
}

func formatTUIC(n *node.Node) (string, error) {
	const s = schemeTUIC
	o := n.TUIC
	id, err := checkUUID(s, o.UUID)
	if err != nil {
		return "", err
	}
	if o.Password == "" {
		return "", errf(s, "password", "empty")
	}
	var q query
	q.addNonEmpty("congestion_control", o.CongestionControl)
	q.addNonEmpty("udp_relay_mode", o.UDPRelayMode)
	if o.ZeroRTT {
		q.add("reduce_rtt", "1")
	}
	if o.Heartbeat > 0 {
		q.add("heartbeat", o.Heartbeat.String())
	}
	if err := addQUICTLS(s, &q, n.TLS, "allow_insecure"); err != nil {
		return "", err
	}
	if n.TLS != nil && n.TLS.NoSNI {
		q.add("disable_sni", "1")
	}
	return joinURI(s, id+":"+escape(o.Password), n, "", "", &q), nil
}

// parseAnyTLS reads anytls://password@host[:port]/?sni=…&insecure=1#name
// (anytls-go's URI format, as sing-box and mihomo clients share it). The
// port defaults to 443; Shadowrocket's ?password= form is read too.
func parseAnyTLS(u *uri) (*node.Node, error) {
	s := u.scheme
	password, err := linkPassword(s, u.user, u.query)
	if err != nil {
		return nil, err
	}
	port, err := parsePort(s, u.port, 443)
	if err != nil {
		return nil, err
	}
	t, err := quicTLS(s, u.query)
	if err != nil {
		return nil, err
	}
	return &node.Node{Name: u.name(), Protocol: node.AnyTLS, Server: u.host, Port: port, TLS: t,
		AnyTLS: &node.AnyTLSOptions{Password: password}}, nil
}

func formatAnyTLS(n *node.Node) (string, error) {
	const s = schemeAnyTLS
	if n.AnyTLS.Password == "" {
		return "", errf(s, "password", "empty")
	}
	var q query
	if err := addQUICTLS(s, &q, n.TLS, "insecure"); err != nil {
		return "", err
	}
	return joinURI(s, escape(n.AnyTLS.Password), n, "", "/", &q), nil
}

// linkPassword is the password from the user info or, when that has
// none, Shadowrocket's ?password=; empty is an error.
func linkPassword(scheme, fromUser string, q params) (string, error) {
	if fromUser == "" {
		fromUser = q.get("password")
	}
	if fromUser == "" {
		return "", errf(scheme, "password", "empty")
	}
	return fromUser, nil
}
