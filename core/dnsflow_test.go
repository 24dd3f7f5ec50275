package core

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/dns"
	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/outbound"
	"github.com/skiffvpn/skiff/core/rule"
	"github.com/skiffvpn/skiff/core/ruleset"
	"github.com/skiffvpn/skiff/core/stats"
	"golang.org/x/net/dns/dnsmessage"
)

func newTestDNSHandler(t *testing.T, rules []rule.Rule) *dnsHandler {
	t.Helper()
	cfg := &Config{Nodes: []*node.Node{testNode()}, Final: TargetDirect, Rules: rules, Dialer: &outbound.SystemDialer{}}
	rt, err := buildRouting(context.Background(), cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.close() })
	eng := NewEngine(rt.router, stats.New(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	h, err := newDNSHandler(eng, DNSConfig{}, rt, &dns.SystemUpstream{})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// query asks h for name's A record over a real UDP socket pair, as the
// netstack hands a port-53 session over, and returns the answer.
func query(t *testing.T, h *dnsHandler, name string) (dnsmessage.RCode, netip.Addr) {
	t.Helper()
	srv, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- h.HandlePacket(ctx, flow.Metadata{Network: flow.UDP, Destination: flow.Addr{IP: netip.MustParseAddr("8.8.8.8"), Port: 53}}, srv)
	}()
	defer func() { cancel(); srv.Close(); <-done }()

	app, err := net.Dial("udp", srv.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: 7, RecursionDesired: true})
	b.StartQuestions()
	b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName(name + "."), Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET})
	q, _ := b.Finish()
	app.Write(q)
	app.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp := make([]byte, 512)
	n, err := app.Read(resp)
	if err != nil {
		t.Fatalf("no DNS answer: %v", err)
	}
	var p dnsmessage.Parser
	hdr, err := p.Start(resp[:n])
	if err != nil || hdr.ID != 7 {
		t.Fatalf("bad answer: %v id=%d", err, hdr.ID)
	}
	p.SkipAllQuestions()
	for {
		ah, err := p.AnswerHeader()
		if err != nil {
			return hdr.RCode, netip.Addr{}
		}
		if ah.Type == dnsmessage.TypeA {
			a, _ := p.AResource()
			return hdr.RCode, netip.AddrFrom4(a.A)
		}
		p.SkipAnswer()
	}
}

func TestDNSHandlerFakeIP(t *testing.T) {
	h := newTestDNSHandler(t, []rule.Rule{
		{DomainSuffix: []string{"ads.test"}, Target: TargetBlock},
		{DomainSuffix: []string{"skiff.test"}, Target: TargetProxy},
	})
	rc, ip := query(t, h, "www.skiff.test")
	if rc != dnsmessage.RCodeSuccess || !netip.MustParsePrefix("198.18.0.0/15").Contains(ip) {
		t.Fatalf("answer %v %v, want a fake address", rc, ip)
	}
	if rc, _ := query(t, h, "x.ads.test"); rc != dnsmessage.RCodeNameError {
		t.Errorf("blocked name: rcode %v, want NXDOMAIN", rc)
	}
	// A flow to the fake address reaches the engine as the name.
	m := flow.Metadata{Network: flow.TCP, Destination: flow.Addr{IP: ip, Port: 80}}
	if err := h.rewrite(&m); err != nil || m.Destination.Name != "www.skiff.test" || m.Destination.Port != 80 || m.Host != "www.skiff.test" {
		t.Errorf("rewrite: %+v, %v", m, err)
	}
	// A fake address that holds no name goes on as the plain address.
	stale := flow.Metadata{Network: flow.TCP, Destination: flow.Addr{IP: netip.MustParseAddr("198.19.200.200"), Port: 80}}
	m = stale
	var logged strings.Builder
	h.next.log = slog.New(slog.NewTextHandler(&logged, nil))
	if err := h.rewrite(&m); err != nil || m != stale {
		t.Errorf("stale fake address: %+v, %v; want it unchanged", m, err)
	}
	if !strings.Contains(logged.String(), "holds no name") || !strings.Contains(logged.String(), "198.19.200.200:80") {
		t.Errorf("no log line says why the fake address went on as it is: %q", logged.String())
	}
}

func TestDNSHandlerFakeIPRange(t *testing.T) {
	p4, p6, err := ParseFakeIPRange("10.200.0.0/16, fd00:5::/64")
	if err != nil {
		t.Fatal(err)
	}
	cfg := &Config{Nodes: []*node.Node{testNode()}, Final: TargetProxy, Dialer: &outbound.SystemDialer{}}
	rt, err := buildRouting(context.Background(), cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.close()
	eng := NewEngine(rt.router, stats.New(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	h, err := newDNSHandler(eng, DNSConfig{FakeIPRange4: p4, FakeIPRange6: p6}, rt, &dns.SystemUpstream{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ip := query(t, h, "www.skiff.test"); !p4.Contains(ip) {
		t.Errorf("fake address %v, want one from %v", ip, p4)
	}
	tc := TUNConfig{DNS: DNSConfig{FakeIPRange4: p4, FakeIPRange6: p6}}
	if got := tc.fakeIPRanges(); len(got) != 2 || got[0] != p4 || got[1] != p6 {
		t.Errorf("routed ranges %v", got)
	}
}

func TestParseFakeIPRange(t *testing.T) {
	for _, tc := range []struct {
		in     string
		p4, p6 string
		err    string
	}{
		{in: "198.18.0.0/15", p4: "198.18.0.0/15"},
		{in: "fd00::/64", p6: "fd00::/64"},
		{in: "10.9.8.7/16,fd00:1::/64", p4: "10.9.0.0/16", p6: "fd00:1::/64"},
		{in: "", err: "no prefix"},
		{in: "10.0.0.0/28", err: "too small"},
		{in: "10.0.0.0/16,10.1.0.0/16", err: "one range per family"},
		{in: "banana", err: "fake-IP range"},
	} {
		p4, p6, err := ParseFakeIPRange(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || p4.String() != orInvalid(tc.p4) || p6.String() != orInvalid(tc.p6) {
			t.Errorf("%q: %v %v %v", tc.in, p4, p6, err)
		}
	}
}

func orInvalid(s string) string {
	if s == "" {
		return netip.Prefix{}.String()
	}
	return s
}

func TestDNSHandlerLocalNameDirect(t *testing.T) {
	h := newTestDNSHandler(t, nil)
	rc, ip := query(t, h, "localhost")
	if rc != dnsmessage.RCodeSuccess || !ip.IsLoopback() {
		t.Errorf("localhost: %v %v, want the system's loopback answer", rc, ip)
	}
}

// answerUpstream answers every A query with addr and counts the queries.
type answerUpstream struct {
	addr  [4]byte
	names []string
}

func (u *answerUpstream) Exchange(_ context.Context, msg []byte) ([]byte, error) {
	var p dnsmessage.Parser
	h, err := p.Start(msg)
	if err != nil {
		return nil, err
	}
	q, err := p.Question()
	if err != nil {
		return nil, err
	}
	u.names = append(u.names, q.Name.String())
	h.Response = true
	b := dnsmessage.NewBuilder(nil, h)
	b.StartQuestions()
	b.Question(q)
	b.StartAnswers()
	b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60}, dnsmessage.AResource{A: u.addr})
	return b.Finish()
}

// TestDNSFollowsRuleSets: a name that a rule set sends direct is resolved
// by the direct resolver (its real address), the rest get fake addresses,
// and a process rule (which no DNS query can match) changes neither.
func TestDNSFollowsRuleSets(t *testing.T) {
	cfg := &Config{
		Nodes: []*node.Node{testNode()}, Final: TargetProxy, Dialer: &outbound.SystemDialer{},
		Rules: []rule.Rule{
			{Process: []string{"curl"}, Target: TargetBlock},
			{RuleSet: []string{"cn"}, Target: TargetDirect},
		},
		RuleSets: []ruleset.Source{{Name: "cn", Format: ruleset.FormatSingBox, Data: []byte(`{"version":2,"rules":[{"domain_suffix":["cn.test"]}]}`)}},
	}
	rt, err := buildRouting(context.Background(), cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.close()
	eng := NewEngine(rt.router, stats.New(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	direct := &answerUpstream{addr: [4]byte{192, 0, 2, 7}}
	h, err := newDNSHandler(eng, DNSConfig{}, rt, direct)
	if err != nil {
		t.Fatal(err)
	}
	if _, ip := query(t, h, "www.cn.test"); ip != netip.MustParseAddr("192.0.2.7") {
		t.Errorf("www.cn.test: %v, want the direct resolver's 192.0.2.7", ip)
	}
	if _, ip := query(t, h, "www.other.test"); !netip.MustParsePrefix("198.18.0.0/15").Contains(ip) {
		t.Errorf("www.other.test: %v, want a fake address", ip)
	}
	if len(direct.names) != 1 || direct.names[0] != "www.cn.test." {
		t.Errorf("the direct resolver was asked %v, want only www.cn.test.", direct.names)
	}
	// The app's flow to the real address is routed as the name: direct,
	// though no rule lists the address.
	m := flow.Metadata{Network: flow.TCP, Destination: flow.Addr{IP: netip.MustParseAddr("192.0.2.7"), Port: 443}}
	if err := h.rewrite(&m); err != nil || m.Host != "www.cn.test" || m.Destination.IP != netip.MustParseAddr("192.0.2.7") {
		t.Fatalf("rewrite: %+v %v", m, err)
	}
	if _, target, _ := rt.router.Route(&m); target != TargetDirect {
		t.Errorf("the flow to www.cn.test's address goes to %s, want direct", target)
	}
	other := flow.Metadata{Network: flow.TCP, Destination: flow.Addr{IP: netip.MustParseAddr("192.0.2.8"), Port: 443}}
	if h.rewrite(&other); other.Host != "" {
		t.Errorf("an address no answer gave got the name %q", other.Host)
	}
}
