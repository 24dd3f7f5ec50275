package cli

import (
	"net/netip"

	"github.com/skiffvpn/skiff/core"
)

// tunFlags are the TUN options of `skiff run`; core.TUNConfig does the work.
type tunFlags struct {
	on      bool
	strict  bool
	private bool // keep private/LAN ranges out of the tunnel
	name    string
	mtu     int
	dns     string
	// dnsUpstream is the DNS server asked through the proxy.
	dnsUpstream string
	ipv6        bool
	fakeIPRange string
	fake4       netip.Prefix
	fake6       netip.Prefix
	killSwitch  bool
	ksAllowLAN  bool
}

// config returns the core's TUN configuration for the flags.
func (f *tunFlags) config() *core.TUNConfig {
	return &core.TUNConfig{Name: f.name, MTU: f.mtu, Strict: f.strict, ExcludePrivate: f.private, IPv6: f.ipv6,
		CrashMonitor: true, KillSwitch: f.killSwitch, KillSwitchAllowLAN: f.ksAllowLAN,
		DNS: core.DNSConfig{Mode: f.dns, Upstream: f.dnsUpstream, FakeIPRange4: f.fake4, FakeIPRange6: f.fake6}}
}
