package tun

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Strict route on macOS is a pf anchor; its rules are written here, as
// text, so that they can be tested on any system. strict_darwin.go loads
// them with pfctl.

// pfAnchor is strict route's pf anchor. The default /etc/pf.conf, which
// macOS loads at boot, evaluates every anchor under com.apple/ (`anchor
// "com.apple/*"`), so rules loaded here take effect without touching the
// main ruleset; the number orders it among Apple's own anchors.
const pfAnchor = "com.apple/250.SkiffStrict"

// pfStrictRules returns the rules of strict route for the utun device dev,
// for Skiff running as uid:
//
//   - DNS (UDP and TCP port 53) on loopback and on dev passes.
//   - DNS from sockets of uid passes: Skiff's own lookups for names that go
//     direct, which leave through the physical interface (see below).
//   - Any other DNS, to any address, even on the LAN, is routed into dev
//     (route-to), where the netstack answers it: macOS routes by address
//     only, so this is what Linux's "dport 53 → table T" rule does there.
//     mDNSResponder, which resolves for every app, is caught here too.
//   - A family dev has no address for can carry no DNS into the tunnel:
//     its DNS is refused (block return: the resolver fails over at once)
//     and the rest of it is kept to the excluded ranges and the link
//     scope, as Linux's rules keep it (no IPv6 leak).
//
// Why pass by uid: pf cannot tell Skiff's bypass sockets from any other
// socket bound to the physical interface (there is no fwmark on macOS); it
// can tell who owns a socket. The pass covers every process of that user,
// which for a TUN client is root: root processes that resolve by
// themselves rather than through mDNSResponder (`sudo dig`) are not caught.
// The alternative that needs no exception, resolving direct names through
// the proxy's DNS upstream instead of the system resolver in strict mode,
// gives up local names (router.lan, a company's split DNS) and is the
// core's choice to make (core/tunmode.go), not this package's.
//
// dev must be utunN (checkName): pf has no quoting.
func pfStrictRules(cfg *Config, dev string, uid int) (string, error) {
	if !isUtun(dev) {
		return "", fmt.Errorf("%w: pf: device %q is not utunN", ErrInvalidConfig, dev)
	}
	var b strings.Builder
	dns := "proto { udp tcp } to any port 53"
	fmt.Fprintf(&b, "# Skiff strict route for %s: DNS only through the tunnel.\n", dev)
	fmt.Fprintf(&b, "pass out quick on lo0 %s\n", dns)
	fmt.Fprintf(&b, "pass out quick on %s %s\n", dev, dns)
	fmt.Fprintf(&b, "pass out quick %s user %d\n", dns, uid)
	var without []int
	for _, fam := range []int{4, 6} {
		inet := "inet"
		p := cfg.Addr4
		if fam == 6 {
			inet, p = "inet6", cfg.Addr6
		}
		if p.IsValid() {
			fmt.Fprintf(&b, "pass out quick route-to (%s %s) %s %s\n", dev, p.Addr(), inet, dns)
			continue
		}
		fmt.Fprintf(&b, "block return out quick %s %s\n", inet, dns)
		without = append(without, fam)
	}
	for _, fam := range without {
		inet := "inet"
		if fam == 6 {
			inet = "inet6"
		}
		keep := exclusions(cfg, fam)
		for _, p := range linkScope {
			if (fam == 6) == p.Addr().Is6() && !slices.Contains(keep, p) {
				keep = append(keep, p)
			}
		}
		s := make([]string, len(keep))
		for i, p := range keep {
			s[i] = p.String()
		}
		fmt.Fprintf(&b, "# No IPv%d in the tunnel: IPv%d only to the excluded ranges.\n", fam, fam)
		fmt.Fprintf(&b, "pass out quick %s to { %s }\n", inet, strings.Join(s, " "))
		fmt.Fprintf(&b, "block return out quick on ! lo0 %s all\n", inet)
	}
	return b.String(), nil
}

// pfMainEvaluates reports whether the main ruleset, as `pfctl -s rules`
// prints it, evaluates anchor: through an anchor rule for it or for a
// wildcard over its parent ("com.apple/*", which evaluates the anchors
// directly under com.apple, not deeper ones).
func pfMainEvaluates(rules, anchor string) bool {
	want := []string{`anchor "` + anchor + `"`}
	if i := strings.LastIndex(anchor, "/"); i >= 0 {
		want = append(want, `anchor "`+anchor[:i]+`/*"`)
	}
	for _, l := range strings.Split(rules, "\n") {
		l = strings.TrimSpace(l)
		for _, w := range want {
			if l == w || strings.HasPrefix(l, w+" ") {
				return true
			}
		}
	}
	return false
}

var pfTokenRE = regexp.MustCompile(`(?m)^Token\s*:\s*([0-9]+)\s*$`)

// parsePFToken returns the reference token that `pfctl -E` prints
// ("Token : 1234"); `pfctl -X` with it drops that reference, and pf stops
// when no other holder (Apple's own services) keeps one.
func parsePFToken(out string) (string, error) {
	m := pfTokenRE.FindStringSubmatch(out)
	if m == nil {
		return "", fmt.Errorf("no token in pfctl -E output %q", strings.TrimSpace(out))
	}
	if _, err := strconv.ParseUint(m[1], 10, 64); err != nil {
		return "", fmt.Errorf("token %q: %w", m[1], err)
	}
	return m[1], nil
}

// pfReleaseGone reports whether a recorded `pfctl -X token` failed only
// because the reference is gone already: pf is not running (ENOENT, after
// a reboot) or does not know the token (EINVAL).
func pfReleaseGone(err error) bool {
	s := err.Error()
	return strings.HasPrefix(s, "pfctl -X ") &&
		(strings.Contains(s, "No such file or directory") || strings.Contains(s, "Invalid argument"))
}
