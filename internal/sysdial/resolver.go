package sysdial

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Skiff's own name lookups (its servers' names, and the names that rules
// send direct in TUN mode) must leave on Skiff's own sockets: marked or
// bound so that they bypass the tunnel, and let through by a kill switch.
// Asking a local stub resolver on loopback (systemd-resolved on
// 127.0.0.53, NetworkManager's dnsmasq on 127.0.1.1) defeats that: the
// stub's own queries to its upstreams are not Skiff's, so a kill switch
// drops them (no server name resolves at boot before Skiff connects), and
// in TUN mode they enter the tunnel and come back to Skiff. So where the
// stub says which upstreams it uses, Skiff asks those directly.

// stubFiles are resolv.conf-format files in which local stub resolvers list
// their upstream servers, in order of preference.
var stubFiles = []string{
	"/run/systemd/resolve/resolv.conf",        // systemd-resolved
	"/run/NetworkManager/no-stub-resolv.conf", // NetworkManager in front of a stub
}

// NewResolver returns a pure-Go resolver whose queries are sent through
// dial. A query that Go would send to a nameserver on loopback goes to
// that stub's upstream servers instead, when a stub file names any (see
// stubFiles); otherwise to the nameserver Go chose.
func NewResolver(dial func(ctx context.Context, network, address string) (net.Conn, error)) *net.Resolver {
	u := &upstreams{files: stubFiles}
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
			return dial(ctx, network, u.replace(address))
		},
	}
}

// upstreams finds a loopback stub's upstream servers. It reads the files
// at most once per upstreamsTTL, so that a network change is followed.
type upstreams struct {
	files []string

	next atomic.Uint32 // rotates over the servers, one per dial

	mu      sync.Mutex
	read    time.Time
	servers []netip.AddrPort
}

const upstreamsTTL = 5 * time.Second

// replace returns the address to dial for the nameserver address Go chose.
func (u *upstreams) replace(address string) string {
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !ap.Addr().IsLoopback() {
		return address
	}
	servers := u.list()
	if len(servers) == 0 {
		return address
	}
	n := u.next.Add(1) - 1
	return servers[int(n)%len(servers)].String()
}

func (u *upstreams) list() []netip.AddrPort {
	u.mu.Lock()
	defer u.mu.Unlock()
	if now := time.Now(); u.read.IsZero() || now.Sub(u.read) > upstreamsTTL {
		u.read = now
		u.servers = nil
		for _, f := range u.files {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			if s := parseNameservers(b); len(s) > 0 {
				u.servers = s
				break
			}
		}
	}
	return u.servers
}

// parseNameservers returns the non-loopback nameservers of a
// resolv.conf-format file, on port 53. A link-local IPv6 server keeps its
// zone ("fe80::1%eth0").
func parseNameservers(b []byte) []netip.AddrPort {
	var out []netip.AddrPort
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) < 2 || string(f[0]) != "nameserver" {
			continue
		}
		ip, err := netip.ParseAddr(string(f[1]))
		if err != nil || ip.IsLoopback() || ip.IsUnspecified() {
			continue
		}
		out = append(out, netip.AddrPortFrom(ip.Unmap(), 53))
	}
	return out
}

// LookupNetIP resolves host with d's resolver when it has one (a Dialer
// whose sockets bypass the tunnel does: see SystemDialer.Resolver), else
// with the system's. An IP address is returned as it is.
func LookupNetIP(ctx context.Context, d Dialer, network, host string) ([]netip.Addr, error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{ip.Unmap()}, nil
	}
	r := net.DefaultResolver
	if rd, ok := d.(interface{ NameResolver() *net.Resolver }); ok && rd.NameResolver() != nil {
		r = rd.NameResolver()
	}
	ips, err := r.LookupNetIP(ctx, network, host)
	for i := range ips {
		ips[i] = ips[i].Unmap()
	}
	return ips, err
}
