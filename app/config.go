package app

import (
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/skiffvpn/skiff/core/api"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/plan"
	"github.com/skiffvpn/skiff/core/profile"
)

// defaultGroups proposes a failover group for every server that a source
// (a subscription, or the hand-imported nodes) offers over several
// protocols: Hysteria2 first, VLESS+WS+TLS second. Servers already covered
// by a group of the profile are left out.
func defaultGroups(p *profile.Profile) []*profile.Group {
	type key struct{ source, host string }
	var order []key
	byKey := map[key][]*profile.Node{}
	for _, n := range p.Nodes {
		if n.Unsupported != "" {
			continue
		}
		k := key{n.Subscription, strings.ToLower(n.Config.Server)}
		if _, ok := byKey[k]; !ok {
			order = append(order, k)
		}
		byKey[k] = append(byKey[k], n)
	}
	covered := map[string]bool{}
	for _, g := range p.Groups {
		for _, m := range g.Members {
			covered[m] = true
		}
	}
	var out []*profile.Group
	for _, k := range order {
		nodes := byKey[k]
		if len(nodes) < 2 || covered[nodes[0].ID] {
			continue
		}
		sort.SliceStable(nodes, func(i, j int) bool { return plan.ProtocolRank(&nodes[i].Config) < plan.ProtocolRank(&nodes[j].Config) })
		g := &profile.Group{ID: "g" + nodes[0].ID, Name: k.host, Type: profile.GroupFailover}
		for _, n := range nodes {
			g.Members = append(g.Members, n.ID)
		}
		out = append(out, g)
	}
	return out
}

// protocolLabel is how a node's protocol and layers are shown:
// "Hysteria2", "VLESS+WS+TLS".
func protocolLabel(n *node.Node) string {
	var s string
	switch n.Protocol {
	case node.Hysteria2:
		s = "Hysteria2"
	case node.VLESS:
		s = "VLESS"
	case node.VMess:
		s = "VMess"
	case node.Shadowsocks:
		s = "Shadowsocks"
	case node.Trojan:
		s = "Trojan"
	case node.TUIC:
		s = "TUIC"
	case node.AnyTLS:
		s = "AnyTLS"
	default:
		s = n.Protocol
	}
	if n.Protocol == node.Hysteria2 || n.Protocol == node.TUIC {
		return s
	}
	if t := n.Transport; t != nil && t.Type != "" && t.Type != node.TransportTCP {
		s += "+" + strings.ToUpper(t.Type)
	}
	if n.TLS != nil {
		if n.TLS.Reality != nil {
			s += "+REALITY"
		} else {
			s += "+TLS"
		}
	}
	return s
}

// tunAvailable reports whether TUN mode can be offered, and if not, why in
// words the user can act on. The core runs TUN mode on Linux, macOS and
// Windows; whether this process has the rights is privilegeHint's part.
func tunAvailable() (bool, string) {
	switch runtime.GOOS {
	case "linux", "darwin", "windows":
		return true, ""
	}
	return false, "System-wide VPN (TUN) is not available on " + runtime.GOOS + ": use the local proxy (point your apps or the system proxy at the address in Settings)."
}

// privilegeHint says what TUN mode needs, or "" when this window can turn
// it on: the service does it; without one, only a core running as root.
func privilegeHint(service bool) string {
	if service || (runtime.GOOS != "windows" && os.Geteuid() == 0) {
		return ""
	}
	return "System-wide VPN needs the Skiff service, which runs with the rights TUN needs. Install it once with  " +
		serviceInstallCommand() + "  and open Skiff again."
}

// serviceInstallCommand is the exact command that installs the service.
func serviceInstallCommand() string {
	if runtime.GOOS == "windows" {
		return "skiff service install  (in an administrator terminal)"
	}
	// The service is the skiff program, installed next to this window
	// program (skiff-window).
	exe, err := os.Executable()
	if err != nil {
		return "sudo skiff service install"
	}
	return "sudo " + filepath.Join(filepath.Dir(exe), "skiff") + " service install"
}

// explain turns an error from the core into plain words with what the user
// can do about it, by its code; the core's own words follow in brackets.
func explain(e *api.Error, service bool) string {
	if e == nil {
		return ""
	}
	msg := e.Message
	with := func(s string) string { return s + "\n(" + msg + ")" }
	switch e.Code {
	case api.CodePortInUse:
		return with("Another program already uses the local proxy port. Change the port in Settings (Local proxy address), or close that program.")
	case api.CodeNoServer:
		return with("There is no server to connect through yet. Add a subscription or paste a link on Profiles, or pick another server on Profiles or Routes.")
	case api.CodeTUNPermission:
		if h := privilegeHint(service); h != "" {
			return with(h)
		}
		return with("The Skiff service lacks the rights for the system-wide VPN.")
	case api.CodeServerAuth:
		return with("The server rejected the password. Refresh the subscription on Profiles; if it keeps failing, check with your provider that your plan is active.")
	case api.CodeSubscriptionFetch:
		return with("The subscription could not be fetched. Check your internet connection; the provider may be down or the link out of date.")
	case api.CodeForbidden:
		return with("You may not operate the Skiff service: ask an administrator to add you to group skiff.")
	case api.CodeUnavailable:
		return with("The Skiff service cannot be reached; it may be restarting.")
	case api.CodeRunning:
		return ""
	}
	return msg
}
