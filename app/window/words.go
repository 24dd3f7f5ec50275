package window

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/skiffvpn/skiff/core/api"
	"github.com/skiffvpn/skiff/core/node"
)

// protocolNames are the protocols' names as people write them.
var protocolNames = map[string]string{
	node.Hysteria2:   "Hysteria2",
	node.VLESS:       "VLESS",
	node.VMess:       "VMess",
	node.Shadowsocks: "Shadowsocks",
	node.Trojan:      "Trojan",
	node.TUIC:        "TUIC",
	node.AnyTLS:      "AnyTLS",
	node.WireGuard:   "WireGuard",
	node.SSH:         "SSH",
	node.Hysteria:    "Hysteria",
}

// protocolLabel is how a node's protocol and layers are shown:
// "Hysteria2", "VLESS+WS+TLS", "Trojan+TLS+ECH+SMUX", "Shadowsocks+ShadowTLS".
func protocolLabel(n *node.Node) string {
	s, ok := protocolNames[n.Protocol]
	if !ok {
		s = n.Protocol
	}
	if n.Protocol == node.WireGuard && n.WireGuard != nil && n.WireGuard.Amnezia != nil {
		return "AmneziaWG"
	}
	if n.Protocol == node.Hysteria2 || n.Protocol == node.TUIC || n.Protocol == node.WireGuard || n.Protocol == node.SSH || n.Protocol == node.Hysteria {
		return s
	}
	if n.Shadowsocks != nil && n.Shadowsocks.Plugin == "shadow-tls" {
		s += "+ShadowTLS"
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
		if n.TLS.ECH != nil {
			s += "+ECH"
		}
	}
	if n.Multiplex != "" {
		s += "+" + strings.ToUpper(n.Multiplex)
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
	return false, tr("tun.unavailable", M{"OS": runtime.GOOS})
}

// privilegeHint says what TUN mode needs, or "" when this window can turn
// it on: the service does it; without one, only a core running as root.
func privilegeHint(service bool) string {
	if service || (runtime.GOOS != "windows" && os.Geteuid() == 0) {
		return ""
	}
	return tr("tun.needsService", M{"Command": serviceInstallCommand()})
}

// serviceInstallCommand is the exact command that installs the service.
func serviceInstallCommand() string {
	if runtime.GOOS == "windows" {
		return tr("tun.installWindows")
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
// can do about it, by its code. The core's own words (a Go error chain)
// are not among them: details gives them, for a details view.
func explain(e *api.Error, service bool) string {
	if e == nil {
		return ""
	}
	switch e.Code {
	case api.CodeTUNPermission:
		if h := privilegeHint(service); h != "" {
			return h
		}
	case api.CodeRunning:
		return ""
	}
	return trKey(explainKeys, e.Code, tr("explain.unknown"))
}

// explainKeys are the messages of the error codes.
var explainKeys = map[api.Code]string{
	api.CodePortInUse:         "explain.portInUse",
	api.CodeNoServer:          "explain.noServer",
	api.CodeTUNPermission:     "explain.serviceLacksRights",
	api.CodeServerAuth:        "explain.serverAuth",
	api.CodeSubscriptionFetch: "explain.subscriptionFetch",
	api.CodeForbidden:         "explain.forbidden",
	api.CodeUnavailable:       "explain.unavailable",
}

// details returns the core's own words for e, or "".
func details(e *api.Error) string {
	if e == nil {
		return ""
	}
	return e.Message
}
