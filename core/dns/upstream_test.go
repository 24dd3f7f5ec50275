package dns

import (
	"context"
	"crypto/tls"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/outbound/direct"
)

// TestUpstreams exchanges queries with the local test server over every
// transport, through the real direct outbound.
func TestUpstreams(t *testing.T) {
	dns := startTestDNS(t)
	ob := direct.New(nil)
	tlsCfg := &tls.Config{RootCAs: dns.roots, ServerName: "example.com"}
	httpsURL := dns.https.URL + "/dns-query"
	doh, err := NewHTTPSUpstream(ob, httpsURL, tlsCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer doh.Close()
	// DoH to a host name: the name must reach the outbound unresolved.
	redir := &redirectOutbound{Outbound: ob, to: map[string]flow.Addr{"doh.test": addrOf(dns.https.Listener.Addr())}}
	dohName, err := NewHTTPSUpstream(redir, "https://doh.test:"+strconv.Itoa(int(addrOf(dns.https.Listener.Addr()).Port))+"/dns-query", tlsCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer dohName.Close()
	tcp := &TCPUpstream{Outbound: ob, Server: addrOf(dns.tcp.Addr())}
	defer tcp.Close()
	dot := &TLSUpstream{Outbound: ob, Server: addrOf(dns.dot.Addr()), Config: tlsCfg}
	defer dot.Close()

	upstreams := []struct {
		name string
		u    Upstream
	}{
		{"udp", &UDPUpstream{Outbound: ob, Server: addrOf(dns.udp.LocalAddr())}},
		{"tcp", tcp},
		{"tls", dot},
		{"https", doh},
		{"https by name", dohName},
		{"system", &SystemUpstream{Resolver: dns.resolver()}},
	}
	tests := []struct {
		qname   string
		qtype   dnsmessage.Type
		rcode   dnsmessage.RCode
		answers int
	}{
		{"a.example.", dnsmessage.TypeA, dnsmessage.RCodeSuccess, 1},
		{"a.example.", dnsmessage.TypeAAAA, dnsmessage.RCodeSuccess, 1},
		{"a.example.", dnsmessage.TypeMX, dnsmessage.RCodeSuccess, 1},
		{"big.test.", dnsmessage.TypeTXT, dnsmessage.RCodeSuccess, 40}, // over UDP: TC, then TCP
		{"nx.test.", dnsmessage.TypeA, dnsmessage.RCodeNameError, 0},
	}
	for _, up := range upstreams {
		t.Run(up.name, func(t *testing.T) {
			for i, tt := range tests {
				id := uint16(0x4000 + i)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				resp, err := up.u.Exchange(ctx, query(t, id, tt.qname, tt.qtype, 0))
				cancel()
				if err != nil {
					t.Fatalf("%s %v: %v", tt.qname, tt.qtype, err)
				}
				m := parse(t, resp)
				rcode := tt.rcode
				if up.name == "system" && rcode == dnsmessage.RCodeNameError {
					rcode = dnsmessage.RCodeSuccess // the system upstream answers NODATA (see SystemUpstream)
				}
				if m.ID != id || m.RCode != rcode || len(m.Answers) != tt.answers {
					t.Fatalf("%s %v: ID %d, %v, %d answers; want %d, %v, %d", tt.qname, tt.qtype, m.ID, m.RCode, len(m.Answers),
						id, rcode, tt.answers)
				}
				if tt.qtype == dnsmessage.TypeA && tt.answers == 1 {
					if a := m.Answers[0].Body.(*dnsmessage.AResource); netip.AddrFrom4(a.A) != netip.MustParseAddr("192.0.2.1") {
						t.Fatalf("A = %v", a.A)
					}
				}
			}
		})
	}
	if len(redir.seen) == 0 || !redir.seen[0].IsName() || redir.seen[0].Name != "doh.test" {
		t.Fatalf("DoH dialed %v; want the name doh.test unresolved", redir.seen)
	}
	// Connections are reused: many queries, few dials.
	before := len(redir.seen)
	for i := range 10 {
		if _, err := dohName.Exchange(context.Background(), query(t, uint16(i), "r.example.", dnsmessage.TypeA, 0)); err != nil {
			t.Fatal(err)
		}
	}
	if d := len(redir.seen) - before; d > 1 {
		t.Errorf("10 DoH queries took %d new connections", d)
	}
}

func TestUpstreamErrors(t *testing.T) {
	dns := startTestDNS(t)
	ob := direct.New(nil)
	ctx := context.Background()
	q := query(t, 1, "a.example.", dnsmessage.TypeA, 0)

	// Nothing listens: UDP times out with the context, TCP is refused.
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	dead := flow.AddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:9"))
	start := time.Now()
	if _, err := (&UDPUpstream{Outbound: ob, Server: dead}).Exchange(short, q); err == nil {
		t.Error("UDP to a closed port succeeded")
	}
	if time.Since(start) > 2*time.Second {
		t.Error("UDP exchange outlived its context")
	}
	if _, err := (&TCPUpstream{Outbound: ob, Server: dead}).Exchange(ctx, q); err == nil {
		t.Error("TCP to a closed port succeeded")
	}
	// DoT with a certificate the client does not trust.
	dot := &TLSUpstream{Outbound: ob, Server: addrOf(dns.dot.Addr()), Config: &tls.Config{ServerName: "example.com"}}
	if _, err := dot.Exchange(ctx, q); err == nil {
		t.Error("DoT to an untrusted server succeeded")
	}
	// DoH to a path that is not the endpoint.
	doh, _ := NewHTTPSUpstream(ob, dns.https.URL+"/other", &tls.Config{RootCAs: dns.roots, ServerName: "example.com"})
	defer doh.Close()
	if _, err := doh.Exchange(ctx, q); err == nil {
		t.Error("DoH to a bad path succeeded")
	}
	for _, bad := range []string{"http://dns.example/dns-query", "https:///x", "::"} {
		if _, err := NewHTTPSUpstream(ob, bad, nil); err == nil {
			t.Errorf("NewHTTPSUpstream(%q) succeeded", bad)
		}
	}
	// A server failure reaches the app as SERVFAIL.
	s := NewServer(Config{Proxy: &TCPUpstream{Outbound: ob, Server: dead}})
	resp, err := s.Handle(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if m := parse(t, resp); m.RCode != dnsmessage.RCodeServerFailure || m.ID != 1 {
		t.Errorf("upstream failure answered %+v; want SERVFAIL", m.Header)
	}
	// A reused TCP connection that the server closed is replaced.
	tcp := &TCPUpstream{Outbound: ob, Server: addrOf(dns.tcp.Addr())}
	defer tcp.Close()
	if _, err := tcp.Exchange(ctx, q); err != nil {
		t.Fatal(err)
	}
	for _, c := range tcp.pool.idle {
		c.Close() // as if the server had closed it
	}
	if _, err := tcp.Exchange(ctx, q); err != nil {
		t.Fatalf("exchange after the idle connection closed: %v", err)
	}
}
