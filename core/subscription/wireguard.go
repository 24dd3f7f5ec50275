package subscription

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/skiffvpn/skiff/core/node"
)

// clashWireGuard is a Clash/mihomo `type: wireguard` proxy's own fields
// (Meta-Docs wg.en.md). With peers, the top-level peer fields are not
// used, as in mihomo.
type clashWireGuard struct {
	IP          string           `yaml:"ip"`
	IPv6        string           `yaml:"ipv6"`
	PrivateKey  string           `yaml:"private-key"`
	MTU         int              `yaml:"mtu"`
	DNS         []string         `yaml:"dns"`
	Keepalive   int              `yaml:"persistent-keepalive"`
	Amnezia     *clashAmnezia    `yaml:"amnezia-wg-option"`
	Peers       []clashWGPeer    `yaml:"peers"`
	clashWGPeer `yaml:",inline"` // the single peer when there are no peers
}

type clashWGPeer struct {
	Server       string        `yaml:"server"`
	Port         clashPort     `yaml:"port"`
	PublicKey    string        `yaml:"public-key"`
	PreSharedKey string        `yaml:"pre-shared-key"`
	Reserved     clashReserved `yaml:"reserved"`
	AllowedIPs   []string      `yaml:"allowed-ips"`
	keepalive    int           // seconds; 0: the proxy's persistent-keepalive (sing-box has one per peer)
}

type clashAmnezia struct {
	JC   int    `yaml:"jc"`
	JMin int    `yaml:"jmin"`
	JMax int    `yaml:"jmax"`
	S1   int    `yaml:"s1"`
	S2   int    `yaml:"s2"`
	S3   int    `yaml:"s3"`
	S4   int    `yaml:"s4"`
	H1   string `yaml:"h1"`
	H2   string `yaml:"h2"`
	H3   string `yaml:"h3"`
	H4   string `yaml:"h4"`
	I1   string `yaml:"i1"`
	I2   string `yaml:"i2"`
	I3   string `yaml:"i3"`
	I4   string `yaml:"i4"`
	I5   string `yaml:"i5"`
}

// clashReserved is reserved written as [a, b, c] or as a base64 string.
type clashReserved [3]byte

func (r *clashReserved) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Value == "" {
			return nil
		}
		b, err := node.ParseReserved(n.Value)
		if err != nil {
			return fmt.Errorf("reserved: %w", err)
		}
		*r = b
		return nil
	case yaml.SequenceNode:
		var s []uint8
		if err := n.Decode(&s); err != nil || len(s) != 3 {
			return errors.New("reserved: want three bytes")
		}
		*r = clashReserved(s)
		return nil
	}
	return errors.New("reserved: want three bytes")
}

// wireGuardNode maps a `type: wireguard` proxy; n has its name, server
// and port.
func wireGuardNode(n *node.Node, raw *yaml.Node) (*node.Node, error) {
	if raw == nil {
		return nil, errors.New("wireguard: no settings")
	}
	var w clashWireGuard
	if err := raw.Decode(&w); err != nil {
		return nil, errors.New(yamlReason(err))
	}
	if len(w.Peers) == 0 && n.Server == "" {
		return nil, errors.New("server: missing")
	}
	return w.node(n, []string{w.IP, w.IPv6})
}

// node fills n from w, with the interface addresses addrs ("" skipped).
func (w *clashWireGuard) node(n *node.Node, addrs []string) (*node.Node, error) {
	o := &node.WireGuardOptions{MTU: w.MTU}
	var err error
	if o.PrivateKey, err = node.CanonicalWireGuardKey("private-key", w.PrivateKey); err != nil {
		return nil, err
	}
	for _, a := range addrs {
		if a == "" {
			continue
		}
		p, err := node.InterfacePrefix(a)
		if err != nil {
			return nil, fmt.Errorf("address: %q not an address", a)
		}
		o.Addresses = append(o.Addresses, p)
	}
	for _, d := range w.DNS {
		// mihomo's dns may name DoH/DoT servers too; only plain IPs
		// can be asked through the tunnel here.
		p, err := node.InterfacePrefix(d)
		if err != nil {
			return nil, fmt.Errorf("dns: %q not an IP address", d)
		}
		o.DNS = append(o.DNS, p[:strings.IndexByte(p, '/')])
	}
	peers := w.Peers
	if len(peers) == 0 {
		peers = []clashWGPeer{w.clashWGPeer}
	}
	for i, cp := range peers {
		p := node.WireGuardPeer{Server: strings.Trim(strings.TrimSpace(cp.Server), "[]"), Port: uint16(cp.Port),
			Reserved: [3]byte(cp.Reserved), Keepalive: time.Duration(w.Keepalive) * time.Second}
		if cp.keepalive != 0 {
			p.Keepalive = time.Duration(cp.keepalive) * time.Second
		}
		if p.PublicKey, err = node.CanonicalWireGuardKey("public-key", cp.PublicKey); err != nil {
			return nil, fmt.Errorf("peer %d: %w", i+1, err)
		}
		if cp.PreSharedKey != "" {
			if p.PresharedKey, err = node.CanonicalWireGuardKey("pre-shared-key", cp.PreSharedKey); err != nil {
				return nil, fmt.Errorf("peer %d: %w", i+1, err)
			}
		}
		for _, a := range cp.AllowedIPs {
			pf, err := node.InterfacePrefix(a)
			if err != nil {
				return nil, fmt.Errorf("peer %d: allowed-ips: %q not a prefix", i+1, a)
			}
			p.AllowedIPs = append(p.AllowedIPs, pf)
		}
		o.Peers = append(o.Peers, p)
	}
	// The node's server is the first peer's endpoint.
	if len(w.Peers) > 0 {
		first := &o.Peers[0]
		n.Server, n.Port = first.Server, first.Port
		first.Server, first.Port = "", 0
	} else {
		o.Peers[0].Server, o.Peers[0].Port = "", 0
	}
	if a := w.Amnezia; a != nil {
		o.Amnezia = &node.AmneziaOptions{JunkCount: a.JC, JunkMin: a.JMin, JunkMax: a.JMax, S: [4]int{a.S1, a.S2, a.S3, a.S4},
			H: [4]string{a.H1, a.H2, a.H3, a.H4}, I: [5]string{a.I1, a.I2, a.I3, a.I4, a.I5}}
		if *o.Amnezia == (node.AmneziaOptions{}) {
			o.Amnezia = nil
		}
	}
	n.Protocol, n.WireGuard = node.WireGuard, o
	return n, nil
}

// sbWireGuard is a sing-box wireguard endpoint (1.11 and later, in
// "endpoints") or the legacy wireguard outbound (removed in 1.13), which
// kept its first peer at the top level.
type sbWireGuard struct {
	Address      listable   `json:"address"`       // endpoint
	LocalAddress listable   `json:"local_address"` // legacy outbound
	PrivateKey   string     `json:"private_key"`
	MTU          int        `json:"mtu"`
	Peers        []sbWGPeer `json:"peers"`
	PeerPublic   string     `json:"peer_public_key"` // legacy, with server, server_port, pre_shared_key, reserved
	PreShared    string     `json:"pre_shared_key"`
	Reserved     sbReserved `json:"reserved"`
}

type sbWGPeer struct {
	Address    string     `json:"address"` // endpoint
	Port       uint16     `json:"port"`
	Server     string     `json:"server"` // legacy
	ServerPort uint16     `json:"server_port"`
	PublicKey  string     `json:"public_key"`
	PreShared  string     `json:"pre_shared_key"`
	AllowedIPs listable   `json:"allowed_ips"`
	Keepalive  int        `json:"persistent_keepalive_interval"`
	Reserved   sbReserved `json:"reserved"`
}

// sbReserved is [a, b, c] or, in the legacy outbound, a base64 string.
type sbReserved [3]byte

func (r *sbReserved) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		if s == "" {
			return nil
		}
		v, err := node.ParseReserved(s)
		*r = v
		return err
	}
	var l []uint8
	if err := json.Unmarshal(b, &l); err != nil || (len(l) != 3 && len(l) != 0) {
		return errors.New("reserved: want three bytes")
	}
	if len(l) == 3 {
		*r = sbReserved(l)
	}
	return nil
}

// singBoxWireGuard maps a wireguard endpoint or outbound; n has its name
// (and the legacy outbound's server).
func singBoxWireGuard(n *node.Node, raw json.RawMessage) (*node.Node, error) {
	var w sbWireGuard
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, errors.New(jsonFieldError(err))
	}
	// system (a kernel interface) is ignored: the userspace one carries
	// the same traffic without root.
	peers := w.Peers
	if len(peers) == 0 && w.PeerPublic != "" {
		peers = []sbWGPeer{{Server: n.Server, ServerPort: n.Port, PublicKey: w.PeerPublic, PreShared: w.PreShared, Reserved: w.Reserved}}
	}
	cw := clashWireGuard{PrivateKey: w.PrivateKey, MTU: w.MTU}
	for _, p := range peers {
		cp := clashWGPeer{Server: p.Address, Port: clashPort(p.Port), PublicKey: p.PublicKey, PreSharedKey: p.PreShared,
			Reserved: clashReserved(p.Reserved), AllowedIPs: p.AllowedIPs, keepalive: p.Keepalive}
		if cp.Server == "" {
			cp.Server, cp.Port = p.Server, clashPort(p.ServerPort)
		}
		if cp.Server == "" || cp.Port == 0 {
			return nil, errors.New("peer: address or port missing")
		}
		cw.Peers = append(cw.Peers, cp)
	}
	if len(cw.Peers) == 0 {
		return nil, errors.New("peers: none")
	}
	addrs := append(w.Address, w.LocalAddress...)
	return cw.node(n, addrs)
}
