package subscription

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/skiffvpn/skiff/core/node"
)

// pluginOpts is a Clash proxy's plugin-opts; for shadow-tls with the
// proxy's client-fingerprint, whose ClientHello it shapes (mihomo reads it
// there), and its alpn list comma separated (SIP003 options are flat).
func (cp *clashProxy) pluginOpts() map[string]any {
	if cp.Plugin != "shadow-tls" {
		return cp.PluginOpts
	}
	opts := map[string]any{}
	if cp.ClientFingerprint != "" {
		opts["client-fingerprint"] = cp.ClientFingerprint
	}
	for k, v := range cp.PluginOpts {
		opts[k] = v
		if l, ok := v.([]any); ok && k == "alpn" {
			s := make([]string, len(l))
			for i, a := range l {
				s[i] = fmt.Sprint(a)
			}
			opts[k] = strings.Join(s, ",")
		}
	}
	return opts
}

// sbShadowTLS is what sing-box's shadowtls outbound adds (its tls block is
// the site's handshake), and the detour by which another outbound goes
// through one.
type sbShadowTLS struct {
	Version int    `json:"version"`
	Detour  string `json:"detour"`
}

// shadowTLSDetours joins sing-box's shadowtls outbounds to the
// Shadowsocks outbounds that detour through them: the node dials the
// shadowtls server, with the shadow-tls plugin.
type shadowTLSDetours struct {
	servers map[string]sbOutbound // by tag
	users   []detourUser
}

type detourUser struct {
	n    *node.Node
	tag  string
	line int
}

// take keeps o if it is a shadowtls outbound, which is no node itself.
func (d *shadowTLSDetours) take(o *sbOutbound) bool {
	if o.Type != "shadowtls" {
		return false
	}
	if d.servers == nil {
		d.servers = map[string]sbOutbound{}
	}
	d.servers[o.Tag] = *o
	return true
}

// detourServer stands in for the server of an outbound that names none
// because its detour dials (sing-box's own example of shadowtls leaves
// the shadowsocks outbound without server and server_port), so that the
// node can be built; resolve puts the detour's server in its place or
// drops the node.
const detourServer = "detour.invalid"

// serverless gives o, when it detours and names no server, detourServer.
func (d *shadowTLSDetours) serverless(o *sbOutbound) {
	if o.Detour != "" && o.Server == "" {
		o.Server, o.ServerPort = detourServer, 1
	}
}

// note remembers n, made from o, when o detours.
func (d *shadowTLSDetours) note(o *sbOutbound, n *node.Node, line int) {
	if o.Detour != "" {
		d.users = append(d.users, detourUser{n: n, tag: o.Detour, line: line})
	}
}

// resolve moves each detouring node onto its shadowtls server. A detour
// to an outbound that is not shadowtls is left as before (ignored); a
// node other than Shadowsocks through shadowtls is dropped with a
// warning, as Skiff carries only Shadowsocks through it.
func (d *shadowTLSDetours) resolve(res *Result) {
	drop := map[*node.Node]bool{}
	for _, u := range d.users {
		s, ok := d.servers[u.tag]
		if !ok {
			if u.n.Server == detourServer {
				res.warn(u.line, fmt.Sprintf("outbound %q: server: missing (detour %q is not a shadowtls outbound)", u.n.Name, u.tag))
				drop[u.n] = true
			}
			continue
		}
		if err := joinShadowTLS(u.n, &s); err != nil {
			res.warn(u.line, fmt.Sprintf("outbound %q: %v", u.n.Name, err))
			drop[u.n] = true
		}
	}
	if len(drop) == 0 {
		return
	}
	kept := res.Nodes[:0]
	for _, n := range res.Nodes {
		if !drop[n] {
			kept = append(kept, n)
		}
	}
	res.Nodes = kept
}

// joinShadowTLS makes n dial s with the shadow-tls plugin.
func joinShadowTLS(n *node.Node, s *sbOutbound) error {
	if n.Protocol != node.Shadowsocks {
		return fmt.Errorf("detour %q: only Shadowsocks is carried through shadowtls", s.Tag)
	}
	if n.Shadowsocks.Plugin != "" {
		return fmt.Errorf("detour %q: a Shadowsocks plugin and shadowtls together", s.Tag)
	}
	if s.Server == "" || s.ServerPort == 0 {
		return fmt.Errorf("detour %q: shadowtls outbound without server or server_port", s.Tag)
	}
	version := s.Version
	if version == 0 {
		version = 1 // sing-box's default
	}
	host := ""
	opts := []string{}
	if t := s.TLS; t != nil {
		host = t.ServerName
		if t.UTLS != nil && t.UTLS.Enabled {
			fp := t.UTLS.Fingerprint
			if fp == "" {
				fp = "chrome"
			}
			opts = append(opts, "client-fingerprint="+sip003Escape(fp))
		}
		if len(t.ALPN) > 0 {
			opts = append(opts, "alpn="+sip003Escape(strings.Join(t.ALPN, ",")))
		}
		if t.Insecure {
			opts = append(opts, "skip-cert-verify")
		}
	}
	if host == "" {
		host = s.Server
	}
	opts = append([]string{"host=" + sip003Escape(host), "password=" + sip003Escape(s.Password), "version=" + strconv.Itoa(version)}, opts...)
	unnamed := n.Name == "" || n.Name == n.Address()
	n.Server, n.Port = strings.Trim(s.Server, "[]"), s.ServerPort
	n.Shadowsocks.Plugin, n.Shadowsocks.PluginOpts = "shadow-tls", strings.Join(opts, ";")
	if unnamed {
		n.Name = n.Address()
	}
	return nil
}
