package fetchguard

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	const (
		ok    = ""
		local = "only the host of a URL you typed"
		never = "never fetches"
	)
	for _, tt := range []struct {
		ip          string
		typed, free string // the outcome when typed, when not
	}{
		{"93.184.215.14", ok, ok},
		{"2606:2800:21f:cb07:6820:80da:af6b:8b2c", ok, ok},
		{"198.18.0.5", ok, ok}, // Skiff's fake-IP range: it goes into the tunnel
		{"127.0.0.1", ok, local},
		{"127.8.9.10", ok, local},
		{"::1", ok, local},
		{"::ffff:127.0.0.1", ok, local},
		{"10.1.2.3", ok, local},
		{"172.16.0.1", ok, local},
		{"192.168.1.1", ok, local},
		{"100.100.100.200", ok, local}, // CGNAT: a cloud's metadata service
		{"fd00:ec2::254", ok, local},   // ULA: another's
		{"fec0::1", ok, local},
		{"169.254.169.254", never, never},
		{"fe80::1", never, never},
		{"0.0.0.0", never, never},
		{"::", never, never},
		{"0.1.2.3", never, never},
		{"255.255.255.255", never, never},
		{"240.0.0.1", never, never},
		{"224.0.0.251", never, never},
		{"239.255.255.250", never, never},
		{"ff02::1", never, never},
		{"ff05::2", never, never},
		{"::ffff:169.254.169.254", never, never},
		{"::127.0.0.1", never, never},
		{"64:ff9b::a9fe:a9fe", never, never}, // NAT64 of 169.254.169.254
		{"64:ff9b::7f00:1", never, never},    // NAT64 of 127.0.0.1
		{"64:ff9b::5db8:d70e", ok, ok},       // NAT64 of a public address
		{"2002:a9fe:a9fe::1", never, never},  // 6to4 of 169.254.169.254
		{"2002:5db8:d70e::1", ok, ok},        // 6to4 of a public one
		{"64:ff9b:1::a00:1", never, never},   // local-use NAT64 of 10.0.0.1
	} {
		ip := netip.MustParseAddr(tt.ip)
		for _, c := range []struct {
			typed bool
			want  string
		}{{true, tt.typed}, {false, tt.free}} {
			err := Check(ip, c.typed)
			switch {
			case c.want == ok && err != nil:
				t.Errorf("Check(%s, typed %v) = %v, want ok", ip, c.typed, err)
			case c.want != ok && (err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, ErrRefused)):
				t.Errorf("Check(%s, typed %v) = %v, want a refusal saying %q", ip, c.typed, err, c.want)
			}
		}
	}
	if Check(netip.Addr{}, true) == nil {
		t.Error("the zero address passed")
	}
}

// TestDial checks the dial-time decision: what is typed, what is dialed,
// and that a name is judged by what it resolves to now (DNS rebinding).
func TestDial(t *testing.T) {
	var dialed []string
	dial := func(ctx context.Context, network, address string) (net.Conn, error) {
		dialed = append(dialed, address)
		c1, c2 := net.Pipe()
		c2.Close()
		return c1, nil
	}
	zone := map[string][]netip.Addr{
		"sub.example":    {netip.MustParseAddr("93.184.215.14")},
		"rebind.example": {netip.MustParseAddr("127.0.0.1")},
		"both.example":   {netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("93.184.215.14")},
		"meta.example":   {netip.MustParseAddr("169.254.169.254")},
		"conv.lan":       {netip.MustParseAddr("192.168.1.10")},
		"localhost":      {netip.MustParseAddr("127.0.0.1")},
	}
	lookup := func(ctx context.Context, host string) ([]netip.Addr, error) {
		if ips, ok := zone[host]; ok {
			return ips, nil
		}
		return nil, errors.New("no such host")
	}
	d := Dial(dial, lookup)
	for _, tt := range []struct {
		typed, addr string
		want        string // the address dialed; "" refused
	}{
		{"https://sub.example/s", "sub.example:443", "93.184.215.14:443"},
		{"https://sub.example/s", "rebind.example:80", ""},                   // a redirect that resolves to loopback
		{"https://sub.example/s", "both.example:80", "93.184.215.14:80"},     // the public one only
		{"https://sub.example/s", "127.0.0.1:8080", ""},                      // a redirect to loopback
		{"https://sub.example/s", "[::1]:8080", ""},                          // in IPv6
		{"http://127.0.0.1:25500/sub", "127.0.0.1:25500", "127.0.0.1:25500"}, // a local converter
		{"http://127.0.0.1:25500/sub", "127.0.0.1:8080", "127.0.0.1:8080"},   // the same host: not a redirect elsewhere
		{"http://127.0.0.1:25500/sub", "localhost:8080", ""},                 // another host, though it is the same machine
		{"http://[::1]:25500/sub", "[::1]:25500", "[::1]:25500"},
		{"http://CONV.lan./sub", "conv.lan:80", "192.168.1.10:80"}, // a LAN name the user typed
		{"http://conv.lan/sub", "meta.example:80", ""},
		{"http://169.254.169.254/latest", "169.254.169.254:80", ""}, // typed or not
		{"http://meta.example/", "meta.example:80", ""},
		{"", "127.0.0.1:80", ""}, // nothing typed: public only
		{"", "sub.example:443", "93.184.215.14:443"},
	} {
		dialed = nil
		ctx := context.Background()
		if tt.typed != "" {
			ctx = Typed(ctx, tt.typed)
		}
		c, err := d(ctx, "tcp", tt.addr)
		if c != nil {
			c.Close()
		}
		got := strings.Join(dialed, ",")
		switch {
		case tt.want == "" && (err == nil || !errors.Is(err, ErrRefused) || len(dialed) > 0):
			t.Errorf("typed %q, dial %s: dialed %q, err %v; want a refusal and no dial", tt.typed, tt.addr, got, err)
		case tt.want != "" && (err != nil || got != tt.want):
			t.Errorf("typed %q, dial %s: dialed %q, err %v; want %s", tt.typed, tt.addr, got, err, tt.want)
		}
	}
	// The refusal names the host and what it resolved to.
	_, err := d(Typed(context.Background(), "https://sub.example/"), "tcp", "rebind.example:80")
	if err == nil || !strings.Contains(err.Error(), "rebind.example (127.0.0.1)") || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("refusal %v does not say which host and why", err)
	}
}

// FuzzDial: any address and typed URL give a refusal, a lookup error or a
// dial of an address Check allows, never a panic.
func FuzzDial(f *testing.F) {
	for _, s := range [][2]string{
		{"http://127.0.0.1/", "127.0.0.1:80"}, {"https://a.example/", "[fe80::1%eth0]:443"},
		{"", "[::ffff:10.0.0.1]:1"}, {"http://[::1]/", "[::1]:80"}, {"%%", "x"}, {"http://a/", ":"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, typed, addr string) {
		lookup := func(ctx context.Context, host string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("8.8.8.8")}, nil
		}
		dial := func(ctx context.Context, network, address string) (net.Conn, error) {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				t.Fatalf("dialed %q, not an address", address)
			}
			if Check(ap.Addr(), true) != nil {
				t.Fatalf("dialed %s, which Check refuses even when typed", address)
			}
			return nil, errors.New("not dialing in a fuzz test")
		}
		Dial(dial, lookup)(Typed(context.Background(), typed), "tcp", addr)
	})
}
