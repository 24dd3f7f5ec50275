package app

import (
	"os"
	"runtime"
	"strings"

	"github.com/skiffvpn/skiff/core/api"
	"github.com/skiffvpn/skiff/core/node"
)

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
	exe, err := os.Executable()
	if err != nil {
		exe = "skiff"
	}
	return "sudo " + exe + " service install"
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
