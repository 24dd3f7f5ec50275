package sysdial

import (
	"context"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestParseNameservers(t *testing.T) {
	for _, tc := range []struct {
		name, conf string
		want       []string
	}{
		{"resolved", "# This is /run/systemd/resolve/resolv.conf\nnameserver 192.168.1.1\nnameserver 2001:db8::53\nsearch lan\n", []string{"192.168.1.1:53", "[2001:db8::53]:53"}},
		{"only the stub", "nameserver 127.0.0.53\noptions edns0 trust-ad\n", nil},
		{"loopback and unspecified skipped", "nameserver ::1\nnameserver 0.0.0.0\nnameserver 10.0.0.1\n", []string{"10.0.0.1:53"}},
		{"link-local keeps its zone", "nameserver fe80::1%eth0\n", []string{"[fe80::1%eth0]:53"}},
		{"mapped", "nameserver ::ffff:10.1.2.3\n", []string{"10.1.2.3:53"}},
		{"garbage", "nameserver\nnameserver not-an-ip\nnameservers 10.0.0.2\n\x00\xff\n", nil},
		{"empty", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, ap := range parseNameservers([]byte(tc.conf)) {
				got = append(got, ap.String())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("parseNameservers = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestUpstreamsReplace(t *testing.T) {
	dir := t.TempDir()
	stub := filepath.Join(dir, "stub.conf")
	if err := os.WriteFile(stub, []byte("nameserver 127.0.0.53\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	resolved := filepath.Join(dir, "resolved.conf")
	if err := os.WriteFile(resolved, []byte("nameserver 192.0.2.1\nnameserver 192.0.2.2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	u := &upstreams{files: []string{filepath.Join(dir, "missing.conf"), stub, resolved}}
	for i, tc := range []struct{ in, want string }{
		{"127.0.0.53:53", "192.0.2.1:53"},
		{"[::1]:53", "192.0.2.2:53"}, // rotates
		{"127.0.0.53:53", "192.0.2.1:53"},
		{"10.0.0.1:53", "10.0.0.1:53"}, // not a stub: as Go chose
		{"not an address", "not an address"},
	} {
		if got := u.replace(tc.in); got != tc.want {
			t.Errorf("%d: replace(%s) = %s, want %s", i, tc.in, got, tc.want)
		}
	}
	none := &upstreams{files: []string{stub}}
	if got := none.replace("127.0.0.53:53"); got != "127.0.0.53:53" {
		t.Errorf("with no upstream known, replace = %s; want the stub itself", got)
	}
}

func TestLookupNetIPUsesTheDialersResolver(t *testing.T) {
	var asked bool
	d := &SystemDialer{Resolver: &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
		asked = true
		return nil, os.ErrPermission
	}}}
	if ips, err := LookupNetIP(context.Background(), d, "ip", "::ffff:192.0.2.7"); err != nil || len(ips) != 1 || ips[0] != netip.MustParseAddr("192.0.2.7") {
		t.Errorf("an address: %v %v", ips, err)
	}
	if asked {
		t.Error("an address was looked up")
	}
	LookupNetIP(context.Background(), d, "ip", "example.invalid")
	if !asked {
		t.Error("the dialer's resolver was not asked")
	}
}

func FuzzParseNameservers(f *testing.F) {
	f.Add([]byte("nameserver 192.168.1.1\nnameserver fe80::1%eth0\nsearch lan\n"))
	f.Add([]byte("nameserver 127.0.0.53\noptions edns0\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, ap := range parseNameservers(b) {
			if !ap.IsValid() || ap.Addr().IsLoopback() || ap.Port() != 53 {
				t.Fatalf("parseNameservers gave %v", ap)
			}
		}
	})
}
