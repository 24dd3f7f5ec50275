package plan

import (
	"errors"
	"fmt"

	"github.com/skiffvpn/skiff/core"
)

// Modes of a run.
const (
	ModeProxy = "proxy" // the local SOCKS5/HTTP proxy only
	ModeTUN   = "tun"   // the proxy and the system-wide VPN (TUN device, routes, DNS)
	// ModeSystemProxy is the local proxy with the desktop's proxy settings
	// pointed at it. The core runs as in ModeProxy; the user's session
	// (the window, `skiff run --system-proxy`) sets the desktop's settings
	// (package sysproxy), because they are the user's, not the service's.
	ModeSystemProxy = "system-proxy"
)

// Request is what a front end asks for when it connects. It is data only:
// the service validates every field.
type Request struct {
	Mode   string `json:"mode,omitempty"`   // ModeProxy (default), ModeSystemProxy or ModeTUN
	Target string `json:"target,omitempty"` // a node or group ID; "": the profile's selection
	Listen string `json:"listen,omitempty"` // the local proxy's loopback address; "": core.DefaultListen
	// NoIPv6 keeps IPv6 out of the tunnel (TUN mode).
	NoIPv6 bool `json:"noIPv6,omitempty"`
	// DNS is the DNS mode inside the tunnel: core.DNSFakeIP (default) or
	// core.DNSRealIP.
	DNS string `json:"dns,omitempty"`
}

// Validate checks r's fields.
func (r Request) Validate() error {
	switch r.Mode {
	case "", ModeProxy, ModeSystemProxy, ModeTUN:
	default:
		return fmt.Errorf("mode %q: want %q, %q or %q", r.Mode, ModeProxy, ModeSystemProxy, ModeTUN)
	}
	switch r.DNS {
	case "", core.DNSFakeIP, core.DNSRealIP:
	default:
		return fmt.Errorf("dns %q: want %q or %q", r.DNS, core.DNSFakeIP, core.DNSRealIP)
	}
	if r.Listen != "" {
		if err := CheckListen(r.Listen); err != nil {
			return err
		}
	}
	if len(r.Target) > 128 {
		return errors.New("target: too long")
	}
	return nil
}
