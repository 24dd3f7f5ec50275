package failover

import (
	"fmt"
	"strings"
)

// Firewall applies faults with nftables where packets arrive: in the
// server's namespace for what the client sends, in the client's for what
// the server sends. Dropped packets vanish silently, as on a path that
// blackholes them. A drop on the sending side would not do: a packet
// dropped in a namespace's output hook fails the sender's sendmsg with
// EPERM, which a real lossy path never does, and quic-go closes the
// connection over it.
type Firewall struct {
	Server, Client string // namespaces
}

// Rule is one nftables rule of the fault table: in its "in" chain for the
// packets arriving at the server, its "out" chain for those the server sends
// (dropped as they arrive at the client).
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
// random, in each direction, where they arrive.
func LossUDP(port, pct int) []Rule {
	return []Rule{
		{"in", fmt.Sprintf("udp dport %d numgen random mod 100 < %d drop", port, pct)},
		{"out", fmt.Sprintf("udp sport %d numgen random mod 100 < %d drop", port, pct)},
	}
}

// Set replaces the fault tables' rules with rules (none: no fault).
func (f Firewall) Set(rules ...[]Rule) error {
	for _, side := range []struct{ ns, chain string }{{f.Server, "in"}, {f.Client, "out"}} {
		var exprs []string
		for _, rs := range rules {
			for _, r := range rs {
				if r.Chain == side.chain {
					exprs = append(exprs, r.Expr)
				}
			}
		}
		if err := setFaultTable(side.ns, exprs); err != nil {
			return err
		}
	}
	return nil
}

// setFaultTable replaces the fault table in namespace ns with one input
// chain of exprs.
func setFaultTable(ns string, exprs []string) error {
	var b strings.Builder
	// Creating the table first makes the delete valid on the first call.
	b.WriteString("table inet skiff_fault {}\ndelete table inet skiff_fault\n")
	b.WriteString("table inet skiff_fault {\n")
	b.WriteString("  chain in { type filter hook input priority 0; policy accept;\n")
	for _, e := range exprs {
		b.WriteString("    " + e + "\n")
	}
	b.WriteString("  }\n}\n")
	return RunInput(b.String(), "ip", "netns", "exec", ns, "nft", "-f", "-")
}

// Clear removes every fault.
func (f Firewall) Clear() error { return f.Set() }

// PoliceUDP polices the UDP packets to and from port, each way where they
// arrive, to kbytes kB/s (a burst of 16 kB): what is over vanishes, as
// under a provider's policer.
func PoliceUDP(port, kbytes int) []Rule {
	return police("udp", port, kbytes)
}

// PoliceTCP polices TCP to and from port as PoliceUDP does UDP.
func PoliceTCP(port, kbytes int) []Rule {
	return police("tcp", port, kbytes)
}

func police(proto string, port, kbytes int) []Rule {
	return []Rule{
		{"in", fmt.Sprintf("%s dport %d limit rate over %d kbytes/second burst 16 kbytes drop", proto, port, kbytes)},
		{"out", fmt.Sprintf("%s sport %d limit rate over %d kbytes/second burst 16 kbytes drop", proto, port, kbytes)},
	}
}
