package sysproxy

import (
	"net/netip"
	"strconv"
	"strings"
)

// wininetBypass turns a bypass list into WinINet's ProxyOverride entries:
// wildcards instead of CIDR ranges ("10.*", "172.16.*" … "172.31.*"), and
// <local> for names without a dot. Ranges it cannot write that way (IPv6,
// a prefix over /24) are left out; names and "*.domain" pass as they are.
func wininetBypass(list []string) []string {
	var out []string
	for _, b := range list {
		pfx, err := netip.ParsePrefix(b)
		if err != nil {
			if a, aerr := netip.ParseAddr(b); aerr == nil {
				if a.Is4() {
					out = append(out, a.String())
				} else {
					out = append(out, "["+a.String()+"]")
				}
				continue
			}
			out = append(out, b)
			continue
		}
		if !pfx.Addr().Is4() || pfx.Bits() > 24 {
			continue
		}
		out = append(out, ipv4Wildcards(pfx)...)
	}
	return append(out, "<local>")
}

// ipv4Wildcards writes an IPv4 prefix as wildcards on whole octets: a /12
// is sixteen /16 wildcards.
func ipv4Wildcards(pfx netip.Prefix) []string {
	pfx = pfx.Masked()
	octets := (pfx.Bits() + 7) / 8
	if octets == 0 {
		return []string{"*"}
	}
	n := 1 << (octets*8 - pfx.Bits())
	a := pfx.Addr().As4()
	var out []string
	for i := range n {
		b := a
		b[octets-1] += byte(i)
		parts := make([]string, octets)
		for j := range octets {
			parts[j] = strconv.Itoa(int(b[j]))
		}
		out = append(out, strings.Join(parts, ".")+".*")
	}
	return out
}
