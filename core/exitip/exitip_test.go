package exitip

import (
	"context"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

const cloudflareTrace = "fl=12f34\nh=1.1.1.1\nip=203.0.113.7\nts=1733300000.123\nvisit_scheme=https\n" +
	"uag=Go-http-client/2.0\ncolo=FRA\nsliver=none\nhttp=http/2\nloc=DE\ntls=TLSv1.3\nsni=off\nwarp=off\ngateway=off\n"

func TestParse(t *testing.T) {
	tests := []struct {
		name, body string
		ip, loc    string
		err        bool
	}{
		{name: "cloudflare", body: cloudflareTrace, ip: "203.0.113.7", loc: "DE"},
		{name: "crlf", body: "ip=198.51.100.1\r\nloc=JP\r\n", ip: "198.51.100.1", loc: "JP"},
		{name: "ipv6", body: "ip=2001:db8::1\nloc=US", ip: "2001:db8::1", loc: "US"},
		{name: "mapped v4", body: "ip=::ffff:192.0.2.1\nloc=FR", ip: "192.0.2.1", loc: "FR"},
		{name: "unknown country", body: "ip=192.0.2.1\nloc=XX", ip: "192.0.2.1", loc: "XX"},
		{name: "empty", body: "", err: true},
		{name: "no loc", body: "ip=192.0.2.1\n", err: true},
		{name: "no ip", body: "loc=DE\n", err: true},
		{name: "bad ip", body: "ip=203.0.113.999\nloc=DE", err: true},
		{name: "ip with zone", body: "ip=fe80::1%eth0\nloc=DE", err: true},
		{name: "ip with space", body: "ip= 192.0.2.1\nloc=DE", err: true},
		{name: "lower-case loc", body: "ip=192.0.2.1\nloc=de", err: true},
		{name: "three-letter loc", body: "ip=192.0.2.1\nloc=DEU", err: true},
		{name: "non-ASCII loc", body: "ip=192.0.2.1\nloc=Ä", err: true},
		{name: "html", body: "<html><body>blocked</body></html>", err: true},
		{name: "over the limit", body: "ip=192.0.2.1\nloc=DE\n" + strings.Repeat("x", MaxBody), err: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info, err := Parse(strings.NewReader(tt.body))
			if tt.err {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("Parse = %+v, %v; want ErrMalformed", info, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if info.IP != netip.MustParseAddr(tt.ip) || info.Country != tt.loc {
				t.Errorf("Parse = %+v, want %s %s", info, tt.ip, tt.loc)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add(cloudflareTrace)
	f.Add("ip=2001:db8::1\r\nloc=US\r\n")
	f.Add("ip=\nloc=\n=\n")
	f.Fuzz(func(t *testing.T, body string) {
		info, err := Parse(strings.NewReader(body))
		if err != nil {
			return
		}
		if !info.IP.IsValid() || info.IP.Zone() != "" || info.IP.Is4In6() || !isCountry(info.Country) {
			t.Fatalf("Parse(%q) = %+v without an error", body, info)
		}
		if len(body) > MaxBody {
			t.Fatalf("Parse took %d bytes, over MaxBody", len(body))
		}
	})
}

// directDial is a plain TCP dial, as the direct outbound makes.
func directDial(ctx context.Context, network, addr string) (net.Conn, error) {
	return (&net.Dialer{}).DialContext(ctx, network, addr)
}

func TestLookup(t *testing.T) {
	good := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/cdn-cgi/trace" {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, cloudflareTrace)
	}))
	defer good.Close()
	broken := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusBadGateway)
	}))
	defer broken.Close()
	roots := x509.NewCertPool()
	roots.AddCert(good.Certificate()) // httptest's servers share one certificate

	tests := []struct {
		name  string
		urls  []string
		roots *x509.CertPool
		err   bool
	}{
		{name: "first answers", urls: []string{good.URL + "/cdn-cgi/trace", broken.URL}},
		{name: "falls back", urls: []string{broken.URL + "/cdn-cgi/trace", good.URL + "/cdn-cgi/trace"}},
		{name: "all fail", urls: []string{broken.URL, good.URL + "/elsewhere"}, err: true},
		{name: "untrusted certificate", urls: []string{good.URL + "/cdn-cgi/trace"}, roots: x509.NewCertPool(), err: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pool := roots
			if tt.roots != nil {
				pool = tt.roots
			}
			info, err := Lookup(context.Background(), directDial, pool, tt.urls)
			if tt.err {
				if err == nil {
					t.Fatalf("Lookup = %+v, want an error", info)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if info.IP != netip.MustParseAddr("203.0.113.7") || info.Country != "DE" {
				t.Errorf("Lookup = %+v", info)
			}
		})
	}
}
