package tun

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// Strict route on Windows is a set of Windows Filtering Platform filters,
// planned here as data so that the plan can be tested on any system; the
// thin layer in strict_windows.go hands them to the Base Filtering Engine.
//
// All filters sit in one sublayer of Skiff's own, at the ALE connect layers
// (FWPM_LAYER_ALE_AUTH_CONNECT_V4/V6: the first packet of a flow, or a
// connect()), and are evaluated from the highest weight down; the first
// that matches decides for the sublayer. A permit here is a soft one (the
// action right is not cleared), so it only means "strict route does not
// block this": the Windows Firewall and other sublayers still decide for
// themselves, and a block anywhere wins.

// wfpRule is one WFP filter of strict route. Its conditions are the fields
// that are set; all of them must match (several protocols or prefixes are
// alternatives: WFP ORs conditions on the same field).
type wfpRule struct {
	Name   string // display name, also what the tests compare
	V6     bool   // FWPM_LAYER_ALE_AUTH_CONNECT_V6, else _V4
	Permit bool   // FWP_ACTION_PERMIT, else FWP_ACTION_BLOCK
	Weight uint8  // order inside the sublayer: higher first

	Loopback   bool           // FWPM_CONDITION_FLAGS has FWP_CONDITION_FLAG_IS_LOOPBACK
	App        bool           // FWPM_CONDITION_ALE_APP_ID is Skiff's own executable
	Tunnel     bool           // FWPM_CONDITION_IP_LOCAL_INTERFACE is the tunnel's LUID
	Protocols  []uint8        // FWPM_CONDITION_IP_PROTOCOL, any of
	RemotePort uint16         // FWPM_CONDITION_IP_REMOTE_PORT
	Remote     []netip.Prefix // FWPM_CONDITION_IP_REMOTE_ADDRESS, any of
	Local      []netip.Prefix // FWPM_CONDITION_IP_LOCAL_ADDRESS, any of
}

// String formats the rule for logs and tests, e.g.
// "v4 w12 block proto 6,17 port 53".
func (r wfpRule) String() string {
	var b strings.Builder
	if r.V6 {
		b.WriteString("v6")
	} else {
		b.WriteString("v4")
	}
	fmt.Fprintf(&b, " w%d", r.Weight)
	if r.Permit {
		b.WriteString(" permit")
	} else {
		b.WriteString(" block")
	}
	if r.Loopback {
		b.WriteString(" loopback")
	}
	if r.App {
		b.WriteString(" app")
	}
	if r.Tunnel {
		b.WriteString(" tunnel")
	}
	if len(r.Protocols) > 0 {
		p := make([]string, len(r.Protocols))
		for i, n := range r.Protocols {
			p[i] = fmt.Sprint(n)
		}
		b.WriteString(" proto " + strings.Join(p, ","))
	}
	if r.RemotePort != 0 {
		fmt.Fprintf(&b, " port %d", r.RemotePort)
	}
	if len(r.Remote) > 0 {
		p := make([]string, len(r.Remote))
		for i, n := range r.Remote {
			p[i] = n.String()
		}
		b.WriteString(" to " + strings.Join(p, ","))
	}
	if len(r.Local) > 0 {
		p := make([]string, len(r.Local))
		for i, n := range r.Local {
			p[i] = n.String()
		}
		b.WriteString(" from " + strings.Join(p, ","))
	}
	return b.String()
}

// Weights of the strict route filters, highest first. DNS is blocked above
// the permit for a family's excluded ranges, so that a resolver on the LAN
// is not reached around the tunnel through that permit either.
const (
	wfpWeightLoopback = 15 - iota
	wfpWeightApp
	wfpWeightTunnel
	wfpWeightDNS
	wfpWeightExcluded
	wfpWeightFamily
)

// linkScope are the ranges that never leave the link (link-local,
// multicast, broadcast). A family the device has no address for keeps
// them even in strict mode: neighbour discovery and DHCP use them, and
// they leak nothing beyond the LAN.
var linkScope = []netip.Prefix{
	netip.MustParsePrefix("169.254.0.0/16"),
	netip.MustParsePrefix("224.0.0.0/4"),
	netip.MustParsePrefix("255.255.255.255/32"),
	netip.MustParsePrefix("fe80::/10"),
	netip.MustParsePrefix("ff00::/8"),
}

// planWFP returns the filters of strict route for cfg, for each family:
//
//	w15 permit loopback                       local resolvers and services
//	w14 permit Skiff's executable             its bypass sockets, its own direct DNS
//	w13 permit local interface = tunnel       (family with an address) what enters the tunnel
//	w12 block UDP/TCP remote port 53          DNS never leaves by another interface
//	w11 permit remote in the excluded ranges  (family without an address) servers, LAN
//	w10 block                                 (family without an address) no leak of that family
//
// The last two are Linux's "a family the device has no address for is
// excluded and prohibited". Nothing is planned without AutoRoute and
// StrictRoute.
func planWFP(cfg *Config) []wfpRule {
	if !cfg.AutoRoute || !cfg.StrictRoute {
		return nil
	}
	var rules []wfpRule
	for _, fam := range []int{4, 6} {
		v6 := fam == 6
		has := (fam == 4 && cfg.Addr4.IsValid()) || (v6 && cfg.Addr6.IsValid())
		rules = append(rules,
			wfpRule{Name: "loopback", V6: v6, Permit: true, Weight: wfpWeightLoopback, Loopback: true},
			wfpRule{Name: "skiff", V6: v6, Permit: true, Weight: wfpWeightApp, App: true},
		)
		if has {
			rules = append(rules, wfpRule{Name: "tunnel", V6: v6, Permit: true, Weight: wfpWeightTunnel, Tunnel: true})
		}
		rules = append(rules, wfpRule{Name: "dns", V6: v6, Weight: wfpWeightDNS, Protocols: []uint8{6, 17}, RemotePort: 53})
		if has {
			continue
		}
		remote := exclusions(cfg, fam)
		for _, p := range linkScope {
			if p.Addr().Is6() == v6 && !slices.Contains(remote, p) {
				remote = append(remote, p)
			}
		}
		rules = append(rules,
			wfpRule{Name: "excluded", V6: v6, Permit: true, Weight: wfpWeightExcluded, Remote: remote},
			wfpRule{Name: "family", V6: v6, Weight: wfpWeightFamily},
		)
	}
	return rules
}

// tunnelDNSServer returns the address the system resolver is pointed at
// inside the tunnel: the device's neighbour in its subnet, which the
// netstack answers (the device's own address would be answered by the
// system itself, over loopback). It reports false when the subnet has no
// room for one.
func tunnelDNSServer(p netip.Prefix) (netip.Addr, bool) {
	if !p.IsValid() {
		return netip.Addr{}, false
	}
	a := p.Addr().Next()
	if !a.IsValid() || !p.Contains(a) {
		return netip.Addr{}, false
	}
	if a.Is4() && p.Bits() < 31 && a == lastAddr(p) {
		return netip.Addr{}, false // the broadcast address
	}
	return a, true
}

// lastAddr returns the highest address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}
