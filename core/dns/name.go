package dns

import (
	"net/netip"
	"strconv"
	"strings"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/skiffvpn/skiff/core/hostname"
)

// CanonicalName returns a DNS name in the form Skiff keys names by (see
// package hostname): lower case, without the trailing dot. ok is false
// unless the name is a host name. Only such names get fake addresses and
// reach an outbound as a flow.Addr name.
func CanonicalName(name string) (canonical string, ok bool) { return hostname.Canonical(name) }

// questionName returns the canonical form of a question's name, allocating
// only the returned string.
func questionName(n *dnsmessage.Name) (string, bool) {
	return hostname.CanonicalBytes(n.Data[:n.Length])
}

// reverseAddr parses a reverse-lookup name (canonical form, as from
// questionName): "d.c.b.a.in-addr.arpa" or the 32 nibbles of
// "….ip6.arpa".
func reverseAddr(name string) (netip.Addr, bool) {
	if v4, ok := strings.CutSuffix(name, ".in-addr.arpa"); ok {
		var a [4]byte
		for i := 3; i >= 0; i-- {
			part := v4
			if i > 0 {
				j := strings.IndexByte(v4, '.')
				if j < 0 {
					return netip.Addr{}, false
				}
				part, v4 = v4[:j], v4[j+1:]
			} else if strings.IndexByte(v4, '.') >= 0 {
				return netip.Addr{}, false
			}
			n := 0
			if len(part) == 0 || len(part) > 3 || (len(part) > 1 && part[0] == '0') {
				return netip.Addr{}, false
			}
			for k := 0; k < len(part); k++ {
				c := part[k]
				if c < '0' || c > '9' {
					return netip.Addr{}, false
				}
				n = n*10 + int(c-'0')
			}
			if n > 255 {
				return netip.Addr{}, false
			}
			a[i] = byte(n)
		}
		return netip.AddrFrom4(a), true
	}
	if v6, ok := strings.CutSuffix(name, ".ip6.arpa"); ok {
		if len(v6) != 63 {
			return netip.Addr{}, false
		}
		var a [16]byte
		for i := 0; i < 32; i++ {
			c := v6[2*i]
			if i < 31 && v6[2*i+1] != '.' {
				return netip.Addr{}, false
			}
			var nib byte
			switch {
			case c >= '0' && c <= '9':
				nib = c - '0'
			case c >= 'a' && c <= 'f':
				nib = c - 'a' + 10
			default:
				return netip.Addr{}, false
			}
			// The first nibble in the name is the last of the address.
			pos := 31 - i
			if pos%2 == 0 {
				a[pos/2] |= nib << 4
			} else {
				a[pos/2] |= nib
			}
		}
		return netip.AddrFrom16(a), true
	}
	return netip.Addr{}, false
}

// sharedAddressSpace is 100.64.0.0/10 (RFC 6598), used by carrier-grade NAT.
var sharedAddressSpace = netip.MustParsePrefix("100.64.0.0/10")

// localSuffixes are the zones that only the local network can answer.
var localSuffixes = []string{
	".local", ".lan", ".localdomain", ".home.arpa", ".internal", ".localhost",
	".10.in-addr.arpa", ".168.192.in-addr.arpa", ".254.169.in-addr.arpa",
	".d.f.ip6.arpa", ".8.e.f.ip6.arpa", ".9.e.f.ip6.arpa", ".a.e.f.ip6.arpa", ".b.e.f.ip6.arpa",
}

// IsLocalName reports whether a canonical name can only be answered on the
// local network: a single label ("printer", from a search-domain lookup),
// localhost, the local-use zones (.local, .lan, .home.arpa, .internal, …)
// and the reverse zones of private and link-local addresses. A Mode
// function should send such names to ModeDirect: a fake address or a proxy
// server cannot answer them.
func IsLocalName(name string) bool {
	if name == "localhost" || strings.IndexByte(name, '.') < 0 {
		return true
	}
	for _, s := range localSuffixes {
		if strings.HasSuffix(name, s) || name == s[1:] {
			return true
		}
	}
	// 172.16.0.0/12 and 100.64.0.0/10 (shared address space).
	if rest, ok := strings.CutSuffix(name, ".in-addr.arpa"); ok {
		if ip, ok := reverseAddr(name); ok {
			return ip.IsPrivate() || ip.IsLoopback() || ip.IsLinkLocalUnicast() || sharedAddressSpace.Contains(ip)
		}
		if o2, ok := strings.CutSuffix(rest, ".172"); ok {
			if i := strings.LastIndexByte(o2, '.'); i >= 0 {
				o2 = o2[i+1:]
			}
			n, err := strconv.Atoi(o2)
			return err == nil && n >= 16 && n <= 31
		}
		return strings.HasSuffix(rest, ".127") || rest == "127"
	}
	return false
}
