package tun

import "net/netip"

// The Windows kill switch is a sublayer of persistent WFP filters
// (FWPM_FILTER_FLAG_PERSISTENT): the Base Filtering Engine keeps them
// when the process ends and across reboots, until they are deleted by
// key. Its plan is data, like strict route's (planWFP), and is tested on
// every system; killswitch_windows.go adds it.

// Weights of the kill switch's filters inside its own sublayer.
const (
	wfpKSLoopback = 15 - iota
	wfpKSApp
	wfpKSTunnel
	wfpKSControl
	wfpKSDNS
	wfpKSLAN
	wfpKSBlock
)

// planWFPKillSwitch returns the kill switch's filters, for each family:
//
//	w15 permit loopback
//	w14 permit Skiff's executable          its sockets to the servers (no fwmark on Windows)
//	w13 permit local address in the device's subnet   what enters the tunnel
//	w12 permit DHCP (UDP to port 67, 547) and, for IPv6, ICMPv6 on the link scope (neighbour discovery)
//	w11 block UDP/TCP port 53              (allow LAN) DNS to the LAN stays blocked
//	w10 permit remote in the private ranges (allow LAN)
//	w9  block
//
// The tunnel is matched by its addresses, not by its interface: an
// interface's LUID may differ when the adapter is made again, the
// addresses are Skiff's own choice.
func planWFPKillSwitch(k *KillSwitch) []wfpRule {
	var rules []wfpRule
	for _, fam := range []int{4, 6} {
		v6 := fam == 6
		rules = append(rules,
			wfpRule{Name: "loopback", V6: v6, Permit: true, Weight: wfpKSLoopback, Loopback: true},
			wfpRule{Name: "skiff", V6: v6, Permit: true, Weight: wfpKSApp, App: true},
		)
		var local []netip.Prefix
		for _, p := range k.Addrs {
			if p.IsValid() && p.Addr().Is6() == v6 {
				local = append(local, p.Masked())
			}
		}
		if len(local) > 0 {
			rules = append(rules, wfpRule{Name: "tunnel", V6: v6, Permit: true, Weight: wfpKSTunnel, Local: local})
		}
		if v6 {
			rules = append(rules,
				wfpRule{Name: "dhcp", V6: true, Permit: true, Weight: wfpKSControl, Protocols: []uint8{17}, RemotePort: 547},
				wfpRule{Name: "ndp", V6: true, Permit: true, Weight: wfpKSControl, Protocols: []uint8{58},
					Remote: []netip.Prefix{netip.MustParsePrefix("fe80::/10"), netip.MustParsePrefix("ff02::/16")}},
			)
		} else {
			rules = append(rules, wfpRule{Name: "dhcp", Permit: true, Weight: wfpKSControl, Protocols: []uint8{17}, RemotePort: 67})
		}
		if k.AllowLAN {
			var lan []netip.Prefix
			for _, p := range PrivatePrefixes {
				if p.Addr().Is6() == v6 {
					lan = append(lan, p)
				}
			}
			rules = append(rules,
				wfpRule{Name: "dns", V6: v6, Weight: wfpKSDNS, Protocols: []uint8{6, 17}, RemotePort: 53},
				wfpRule{Name: "lan", V6: v6, Permit: true, Weight: wfpKSLAN, Remote: lan},
			)
		}
		rules = append(rules, wfpRule{Name: "block", V6: v6, Weight: wfpKSBlock})
	}
	return rules
}
