package harness

import (
	"net/url"
	"strconv"
)

// HysteriaV1 is a Hysteria v1 server: sing-box's hysteria inbound
// (with_quic), its user's auth string in Password and, when set, the
// xplus key in ObfsPassword.
const HysteriaV1 Kind = "hysteria"

// HysteriaV1Mbps is the rate both ends declare, in Mbit/s: sing-box's
// server paces its sending to the client's download rate with Brutal, and
// sing-box's client its uploads to its upload rate. It is set above what
// loopback carries here (about 800 Mbit/s per direction on the 2 cores)
// so that the pacing does not cap the figures.
const HysteriaV1Mbps = 4000

// hysteriaV1Inbound fills the sing-box inbound in (and its tls) for s.
func (s *Server) hysteriaV1Inbound(in, tls map[string]any) {
	in["type"] = "hysteria"
	in["up_mbps"], in["down_mbps"] = HysteriaV1Mbps, HysteriaV1Mbps
	in["users"] = []map[string]any{{"name": "test", "auth_str": s.Password}}
	if s.ObfsPassword != "" {
		in["obfs"] = s.ObfsPassword
	}
	tls["alpn"] = []string{"hysteria"}
}

// hysteriaV1Outbound fills the sing-box client outbound out (and its tls)
// for s.
func (s *Server) hysteriaV1Outbound(out, tls map[string]any) {
	out["type"] = "hysteria"
	out["auth_str"] = s.Password
	out["up_mbps"], out["down_mbps"] = HysteriaV1Mbps, HysteriaV1Mbps
	if s.ObfsPassword != "" {
		out["obfs"] = s.ObfsPassword
	}
	tls["alpn"] = []string{"hysteria"}
}

// HysteriaV1Link is s's share link as v1.hysteria.network writes it, with
// auth as the auth string.
func (s *Server) HysteriaV1Link(t ClientTLS, auth string) string {
	q := url.Values{}
	q.Set("protocol", "udp")
	q.Set("auth", auth)
	q.Set("peer", "localhost")
	if t.Insecure {
		q.Set("insecure", "1")
	}
	if t.Pin != "" {
		q.Set("pinSHA256", t.Pin)
	}
	q.Set("upmbps", strconv.Itoa(HysteriaV1Mbps))
	q.Set("downmbps", strconv.Itoa(HysteriaV1Mbps))
	if s.ObfsPassword != "" {
		q.Set("obfs", "xplus")
		q.Set("obfsParam", s.ObfsPassword)
	}
	u := url.URL{Scheme: "hysteria", Host: s.linkAddr(), RawQuery: q.Encode(), Fragment: s.Name()}
	return u.String()
}
