package cli

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
}
