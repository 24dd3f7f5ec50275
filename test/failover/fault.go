package failover

import (
	"fmt"
	"strings"
)

// Firewall applies faults with nftables inside one namespace (the server's):
// dropped packets vanish silently, as on a path that blackholes them, with
// no local reject for the client to notice.
type Firewall struct {
	NS string
}

// Rule is one nftables rule of the fault table, in its input or output
// chain.
type Rule struct {
	Chain string // "in" or "out"
	Expr  string // e.g. "udp dport 8443 drop"
}

// DropUDPTo drops every UDP packet arriving for port.
func DropUDPTo(port int) []Rule {
	return []Rule{{"in", fmt.Sprintf("udp dport %d drop", port)}}
}

// DropTCPTo drops every TCP segment arriving for port.
func DropTCPTo(port int) []Rule {
	return []Rule{{"in", fmt.Sprintf("tcp dport %d drop", port)}}
}

// LossUDP drops pct per cent of the UDP packets to and from port, at
// random, in each direction.
func LossUDP(port, pct int) []Rule {
	return []Rule{
		{"in", fmt.Sprintf("udp dport %d numgen random mod 100 < %d drop", port, pct)},
		{"out", fmt.Sprintf("udp sport %d numgen random mod 100 < %d drop", port, pct)},
	}
}

// Set replaces the fault table's rules with rules (none: no fault).
func (f Firewall) Set(rules ...[]Rule) error {
	var b strings.Builder
	// Creating the table first makes the delete valid on the first call.
	b.WriteString("table inet skiff_fault {}\ndelete table inet skiff_fault\n")
	b.WriteString("table inet skiff_fault {\n")
	b.WriteString("  chain in { type filter hook input priority 0; policy accept;\n")
	for _, rs := range rules {
		for _, r := range rs {
			if r.Chain == "in" {
				b.WriteString("    " + r.Expr + "\n")
			}
		}
	}
	b.WriteString("  }\n  chain out { type filter hook output priority 0; policy accept;\n")
	for _, rs := range rules {
		for _, r := range rs {
			if r.Chain == "out" {
				b.WriteString("    " + r.Expr + "\n")
			}
		}
	}
	b.WriteString("  }\n}\n")
	return runInput(b.String(), "ip", "netns", "exec", f.NS, "nft", "-f", "-")
}

// Clear removes every fault.
func (f Firewall) Clear() error { return f.Set() }
