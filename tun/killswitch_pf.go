package tun

import (
	"fmt"
	"strings"
)

// pfKillSwitchAnchor is the macOS kill switch's pf anchor: under
// com.apple/ like strict route's (pfAnchor), so that the default pf.conf
// evaluates it, and apart from it, so that strict route's changes leave
// it alone.
const pfKillSwitchAnchor = "com.apple/251.SkiffKillSwitch"

// pfKillSwitchRules returns the kill switch as pf rules. pf has no mark
// for Skiff's own sockets: what passes to the servers is traffic to their
// addresses (k.Servers). The device is utunN, whose number macOS picks when
// it opens: before Skiff has opened one (at boot, after a crash) the rules
// pass the interface group utun, every utun device (other VPN clients'
// too), rather than none. Any other name is refused (checkName): pf has
// no quoting, and a newline in a name would start a rule of its own.
func pfKillSwitchRules(k *KillSwitch) (string, error) {
	if err := checkName("darwin", k.Device); err != nil {
		return "", err
	}
	dev := k.Device
	if dev == DefaultName {
		dev = "utun"
	}
	if err := checkPrefixes("server", 0, k.Servers...); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("# Skiff kill switch: nothing leaves outside the tunnel.\n")
	b.WriteString("pass out quick on lo0 all\n")
	fmt.Fprintf(&b, "pass out quick on %s all\n", dev)
	if len(k.Servers) > 0 {
		s := make([]string, len(k.Servers))
		for i, p := range k.Servers {
			s[i] = p.String()
		}
		fmt.Fprintf(&b, "pass out quick to { %s }\n", strings.Join(s, " "))
	}
	b.WriteString("pass out quick inet proto udp from any port 68 to any port 67\n")
	b.WriteString("pass out quick inet6 proto udp from any port 546 to any port 547\n")
	b.WriteString("pass out quick inet6 proto icmp6 icmp6-type { routersol neighbrsol neighbradv }\n")
	if k.AllowLAN {
		b.WriteString("block drop out quick proto { udp tcp } to any port 53\n")
		s := make([]string, len(PrivatePrefixes))
		for i, p := range PrivatePrefixes {
			s[i] = p.String()
		}
		fmt.Fprintf(&b, "pass out quick to { %s }\n", strings.Join(s, " "))
	}
	b.WriteString("block drop out all\n")
	return b.String(), nil
}
