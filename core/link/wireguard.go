package link

import (
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/skiffvpn/skiff/core/node"
)

const schemeWireGuard = "wireguard"

// wgDefaultPort is the peer's port when a link has none (Throne's).
const wgDefaultPort = 51820

// wgParams are a WireGuard link's query parameters by normalised name:
// lower case without '_', '-' or ' ', so that publickey, public_key and
// public-key are one (Hiddify's ray2sing reads them so).
type wgParams map[string]string

func (w wgParams) get(keys ...string) (string, string, bool) {
	for _, k := range keys {
		if v, ok := w[k]; ok {
			return k, v, true
		}
	}
	return "", "", false
}

// parseWireGuard reads the WireGuard links of v2rayN (wireguard://key@
// host:port/?publickey=…&address=a,b&reserved=1,2,3&mtu=…&presharedkey=…),
// Throne (wg://…?private_key=…&public_key=…&local_address=a-b&
// reserved=1-2-3&persistent_keepalive_interval=…) and Hiddify (also ip=,
// pk=, psk=, keepalive=, allowedips=, AmneziaWG's jc…i5). A bare address
// gets /32 or /128.
func parseWireGuard(u *uri) (*node.Node, error) {
	s := u.scheme
	port, err := parsePort(s, u.port, wgDefaultPort)
	if err != nil {
		return nil, err
	}
	q := wgParams{}
	for k, v := range u.query {
		nk := strings.ToLower(strings.NewReplacer("_", "", "-", "", " ", "").Replace(k))
		if _, dup := q[nk]; !dup {
			q[nk] = v
		}
	}
	o := &node.WireGuardOptions{}
	k, v := "privatekey", u.user
	if v == "" {
		if k2, v2, ok := q.get("privatekey", "pk", "secretkey"); ok {
			k, v = k2, v2
		}
	}
	if o.PrivateKey, err = wgKey(s, k, v); err != nil {
		return nil, err
	}
	p := node.WireGuardPeer{}
	k, v, _ = q.get("publickey", "peerpublickey", "pub", "peerpub")
	if k == "" {
		k = "publickey"
	}
	if p.PublicKey, err = wgKey(s, k, v); err != nil {
		return nil, err
	}
	if k, v, ok := q.get("presharedkey", "psk"); ok && v != "" {
		if p.PresharedKey, err = wgKey(s, k, v); err != nil {
			return nil, err
		}
	}
	if k, v, ok := q.get("reserved"); ok && v != "" {
		if p.Reserved, err = node.ParseReserved(v); err != nil {
			return nil, refuse(s, k, "not three bytes", v)
		}
	}
	if k, v, ok := q.get("keepalive", "persistentkeepaliveinterval", "persistentkeepalive"); ok && v != "" {
		n, err := strconv.ParseUint(v, 10, 16)
		if err != nil {
			return nil, refuse(s, k, "not a number of seconds", v)
		}
		p.Keepalive = time.Duration(n) * time.Second
	}
	if k, v, ok := q.get("allowedips"); ok {
		if p.AllowedIPs, err = wgPrefixes(s, k, v, ","); err != nil {
			return nil, err
		}
	}
	if k, v, ok := q.get("localaddress"); ok {
		o.Addresses, err = wgPrefixes(s, k, v, "-,")
	} else if k, v, ok := q.get("address", "ip"); ok {
		o.Addresses, err = wgPrefixes(s, k, v, ",")
	}
	if err != nil {
		return nil, err
	}
	if len(o.Addresses) == 0 {
		return nil, errf(s, "address", "missing (the interface's own address)")
	}
	if k, v, ok := q.get("mtu"); ok && v != "" {
		if o.MTU, err = strconv.Atoi(v); err != nil || o.MTU < 576 || o.MTU > 9000 {
			return nil, refuse(s, k, "not an MTU (576-9000)", v)
		}
	}
	if k, v, ok := q.get("dns"); ok && v != "" {
		for _, d := range splitList(v) {
			a, err := netip.ParseAddr(d)
			if err != nil {
				return nil, refuse(s, k, "not an IP address", d)
			}
			o.DNS = append(o.DNS, a.String())
		}
	}
	if o.Amnezia, err = wgAmnezia(s, q); err != nil {
		return nil, err
	}
	o.Peers = []node.WireGuardPeer{p}
	return &node.Node{Name: u.name(), Protocol: node.WireGuard, Server: u.host, Port: port, WireGuard: o}, nil
}

// wgKey reads a base64 key (see node.CanonicalWireGuardKey).
func wgKey(scheme, field, v string) (string, error) {
	if v == "" {
		return "", errf(scheme, field, "missing")
	}
	k, err := node.CanonicalWireGuardKey(field, v)
	if err != nil {
		return "", errf(scheme, field, "not a base64 32-byte key")
	}
	return k, nil
}

// wgPrefixes reads a list of addresses or prefixes split by any of seps
// (see node.InterfacePrefix).
func wgPrefixes(scheme, field, v, seps string) ([]string, error) {
	var out []string
	for _, item := range strings.FieldsFunc(v, func(c rune) bool { return strings.ContainsRune(seps, c) || c == ' ' }) {
		p, err := node.InterfacePrefix(item)
		if err != nil {
			return nil, refuse(scheme, field, "not an address", item)
		}
		out = append(out, p)
	}
	return out, nil
}

// wgAmnezia reads AmneziaWG's fields; nil when there are none (or all are
// zero, as Throne writes them with enable_amnezia=false).
func wgAmnezia(scheme string, q wgParams) (*node.AmneziaOptions, error) {
	a := &node.AmneziaOptions{}
	num := func(key string, dst *int) error {
		v, ok := q[key]
		if !ok || v == "" {
			return nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 65535 {
			return refuse(scheme, key, "not a number", v)
		}
		*dst = n
		return nil
	}
	for key, dst := range map[string]*int{"jc": &a.JunkCount, "jmin": &a.JunkMin, "jmax": &a.JunkMax, "s1": &a.S[0], "s2": &a.S[1], "s3": &a.S[2], "s4": &a.S[3]} {
		if err := num(key, dst); err != nil {
			return nil, err
		}
	}
	for i := range a.H {
		if h := q["h"+strconv.Itoa(i+1)]; h != "0" {
			a.H[i] = h
		}
	}
	for i := range a.I {
		a.I[i] = q["i"+strconv.Itoa(i+1)]
	}
	if *a == (node.AmneziaOptions{}) {
		return nil, nil
	}
	return a, nil
}

func formatWireGuard(n *node.Node) (string, error) {
	const s = schemeWireGuard
	o := n.WireGuard
	if len(o.Peers) != 1 {
		return "", errf(s, "peers", "a link carries one peer, the node has %d", len(o.Peers))
	}
	p := o.Peers[0]
	if p.Server != "" || p.Port != 0 {
		return "", errf(s, "peers", "the peer's endpoint is not the node's")
	}
	var q query
	q.add("publickey", p.PublicKey)
	q.addNonEmpty("presharedkey", p.PresharedKey)
	q.add("address", strings.Join(o.Addresses, ","))
	if o.MTU != 0 {
		q.add("mtu", strconv.Itoa(o.MTU))
	}
	if p.Reserved != ([3]byte{}) {
		q.add("reserved", strconv.Itoa(int(p.Reserved[0]))+","+strconv.Itoa(int(p.Reserved[1]))+","+strconv.Itoa(int(p.Reserved[2])))
	}
	if p.Keepalive != 0 {
		if p.Keepalive%time.Second != 0 {
			return "", errf(s, "keepalive", "not whole seconds")
		}
		q.add("keepalive", strconv.Itoa(int(p.Keepalive/time.Second)))
	}
	if len(p.AllowedIPs) > 0 {
		q.add("allowedips", strings.Join(p.AllowedIPs, ","))
	}
	if len(o.DNS) > 0 {
		q.add("dns", strings.Join(o.DNS, ","))
	}
	if a := o.Amnezia; a != nil {
		for _, kv := range []struct {
			k string
			v int
		}{{"jc", a.JunkCount}, {"jmin", a.JunkMin}, {"jmax", a.JunkMax}, {"s1", a.S[0]}, {"s2", a.S[1]}, {"s3", a.S[2]}, {"s4", a.S[3]}} {
			if kv.v != 0 {
				q.add(kv.k, strconv.Itoa(kv.v))
			}
		}
		for i, h := range a.H {
			q.addNonEmpty("h"+strconv.Itoa(i+1), h)
		}
		for i, v := range a.I {
			q.addNonEmpty("i"+strconv.Itoa(i+1), v)
		}
	}
	return joinURI(s, escape(o.PrivateKey), n, "", "/", &q), nil
}
