package dns

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/skiffvpn/skiff/core/outbound/direct"
)

func newFakeServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	if cfg.Pool == nil {
		p, err := NewPool(PoolConfig{})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Pool = p
	}
	return NewServer(cfg)
}

func TestHandleFake(t *testing.T) {
	s := newFakeServer(t, Config{})
	ctx := context.Background()
	tests := []struct {
		name    string
		qname   string
		qtype   dnsmessage.Type
		rcode   dnsmessage.RCode
		answer  string // A/AAAA/PTR value; "" = no answer
		answers int
	}{
		{"A", "www.example.com.", dnsmessage.TypeA, dnsmessage.RCodeSuccess, "198.18.0.2", 1},
		{"AAAA", "www.example.com.", dnsmessage.TypeAAAA, dnsmessage.RCodeSuccess, "fdfe:dcba:9876:18::2", 1},
		{"A mixed case", "WWW.Example.COM.", dnsmessage.TypeA, dnsmessage.RCodeSuccess, "198.18.0.2", 1},
		{"A second name", "api.example.com.", dnsmessage.TypeA, dnsmessage.RCodeSuccess, "198.18.0.3", 1},
		{"HTTPS empty", "www.example.com.", dnsmessage.TypeHTTPS, dnsmessage.RCodeSuccess, "", 0},
		{"SVCB empty", "_dns.example.com.", dnsmessage.TypeSVCB, dnsmessage.RCodeSuccess, "", 0},
		{"MX without upstream", "example.com.", dnsmessage.TypeMX, dnsmessage.RCodeSuccess, "", 0},
		{"PTR of fake v4", "2.0.18.198.in-addr.arpa.", dnsmessage.TypePTR, dnsmessage.RCodeSuccess, "www.example.com.", 1},
		{"PTR of fake v6", "3.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.1.0.0.6.7.8.9.a.b.c.d.e.f.d.f.ip6.arpa.", dnsmessage.TypePTR,
			dnsmessage.RCodeSuccess, "api.example.com.", 1},
		{"PTR of unused fake", "9.9.18.198.in-addr.arpa.", dnsmessage.TypePTR, dnsmessage.RCodeNameError, "", 0},
		{"non-host name, no upstream", "a\\ b.example.", dnsmessage.TypeA, dnsmessage.RCodeServerFailure, "", 0},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := uint16(1000 + i)
			resp, err := s.Handle(ctx, query(t, id, tt.qname, tt.qtype, 0))
			if err != nil {
				t.Fatal(err)
			}
			m := parse(t, resp)
			if m.ID != id || !m.Response || !m.RecursionDesired || m.RCode != tt.rcode {
				t.Fatalf("header %+v; want ID %d, QR, RD, %v", m.Header, id, tt.rcode)
			}
			if len(m.Questions) != 1 || m.Questions[0].Name.String() != tt.qname {
				t.Fatalf("question %v; want the query's, case kept", m.Questions)
			}
			if len(m.Answers) != tt.answers {
				t.Fatalf("%d answers; want %d", len(m.Answers), tt.answers)
			}
			if tt.answers == 0 {
				return
			}
			rr := m.Answers[0]
			if rr.Header.TTL != DefaultFakeTTL || rr.Header.Name.String() != tt.qname {
				t.Errorf("answer header %+v", rr.Header)
			}
			var got string
			switch b := rr.Body.(type) {
			case *dnsmessage.AResource:
				got = netip.AddrFrom4(b.A).String()
			case *dnsmessage.AAAAResource:
				got = netip.AddrFrom16(b.AAAA).String()
			case *dnsmessage.PTRResource:
				got = b.PTR.String()
			}
			if got != tt.answer {
				t.Errorf("answer %q; want %q", got, tt.answer)
			}
		})
	}
	if n, ok := s.cfg.Pool.Name(netip.MustParseAddr("198.18.0.2")); !ok || n != "www.example.com" {
		t.Errorf("pool maps 198.18.0.2 to %q", n)
	}
}

func TestHandleMalformed(t *testing.T) {
	s := newFakeServer(t, Config{})
	ctx := context.Background()
	good := query(t, 7, "a.example.", dnsmessage.TypeA, 0)
	twoQ := func() []byte {
		b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: 7})
		_ = b.StartQuestions()
		q := dnsmessage.Question{Name: dnsmessage.MustNewName("a.example."), Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET}
		_ = b.Question(q)
		_ = b.Question(q)
		out, _ := b.Finish()
		return out
	}()
	withOpcode := func(op byte) []byte {
		b := append([]byte(nil), good...)
		b[2] |= op << 3
		return b
	}
	chaos := func() []byte {
		b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: 7})
		_ = b.StartQuestions()
		_ = b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName("version.bind."), Type: dnsmessage.TypeTXT, Class: dnsmessage.ClassCHAOS})
		out, _ := b.Finish()
		return out
	}()
	tests := []struct {
		name  string
		in    []byte
		rcode dnsmessage.RCode
		drop  bool
	}{
		{"empty", nil, 0, true},
		{"short header", good[:11], 0, true},
		{"response", append([]byte{0, 7, 0x80}, good[3:]...), 0, true},
		{"header only", good[:12], dnsmessage.RCodeFormatError, false},
		{"cut question", good[:20], dnsmessage.RCodeFormatError, false},
		{"no question", []byte{0, 7, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0}, dnsmessage.RCodeFormatError, false},
		{"two questions", twoQ, dnsmessage.RCodeFormatError, false},
		{"NOTIFY", withOpcode(4), dnsmessage.RCodeNotImplemented, false},
		{"CHAOS class", chaos, dnsmessage.RCodeRefused, false},
		{"garbage additional", append(append([]byte(nil), good[:11]...), append([]byte{1}, good[12:]...)...), dnsmessage.RCodeSuccess, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := s.Handle(ctx, tt.in)
			if tt.drop {
				if err == nil {
					t.Fatalf("got a response %x; want it dropped", resp)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var p dnsmessage.Parser
			h, err := p.Start(resp)
			if err != nil {
				t.Fatal(err)
			}
			if h.ID != 7 || !h.Response || h.RCode != tt.rcode {
				t.Fatalf("header %+v; want ID 7 and %v", h, tt.rcode)
			}
		})
	}
}

func TestHandleModes(t *testing.T) {
	dns := startTestDNS(t)
	ob := direct.New(nil)
	modes := map[string]Mode{"proxy.example": ModeProxy, "direct.example": ModeDirect, "ads.example": ModeBlock,
		"big.test": ModeProxy, "nx.test": ModeProxy}
	s := newFakeServer(t, Config{
		Proxy:  &UDPUpstream{Outbound: ob, Server: addrOf(dns.udp.LocalAddr())},
		Direct: &SystemUpstream{Resolver: dns.resolver()},
		Mode:   func(name string) Mode { return modes[name] },
		Cache:  NewCache(0),
	})
	ctx := context.Background()
	tests := []struct {
		qname   string
		qtype   dnsmessage.Type
		edns    uint16
		rcode   dnsmessage.RCode
		answer  string
		answers int
		tc      bool
	}{
		{"proxy.example.", dnsmessage.TypeA, 0, dnsmessage.RCodeSuccess, "192.0.2.1", 1, false},
		{"direct.example.", dnsmessage.TypeA, 0, dnsmessage.RCodeSuccess, "192.0.2.1", 1, false},
		{"direct.example.", dnsmessage.TypeAAAA, 0, dnsmessage.RCodeSuccess, "2001:db8::1", 1, false},
		{"ads.example.", dnsmessage.TypeA, 0, dnsmessage.RCodeNameError, "", 0, false},
		{"fake.example.", dnsmessage.TypeA, 0, dnsmessage.RCodeSuccess, "198.18.0.2", 1, false},
		{"fake.example.", dnsmessage.TypeMX, 0, dnsmessage.RCodeSuccess, "", 1, false}, // other types through the proxy
		{"nx.test.", dnsmessage.TypeA, 0, dnsmessage.RCodeNameError, "", 0, false},
		{"big.test.", dnsmessage.TypeTXT, 0, dnsmessage.RCodeSuccess, "", 0, true},       // UDP→TCP upstream, then too big for the app's UDP
		{"big.test.", dnsmessage.TypeTXT, 16384, dnsmessage.RCodeSuccess, "", 40, false}, // fits the app's EDNS size (from the cache)
	}
	for i, tt := range tests {
		resp, err := s.Handle(ctx, query(t, uint16(i+1), tt.qname, tt.qtype, tt.edns))
		if err != nil {
			t.Fatal(err)
		}
		m := parse(t, resp)
		if m.ID != uint16(i+1) || m.RCode != tt.rcode || len(m.Answers) != tt.answers || m.Truncated != tt.tc {
			t.Errorf("%s %v: rcode %v, %d answers, TC %v; want %v, %d, %v", tt.qname, tt.qtype, m.RCode, len(m.Answers), m.Truncated,
				tt.rcode, tt.answers, tt.tc)
			continue
		}
		if tt.answer != "" {
			var got string
			switch b := m.Answers[0].Body.(type) {
			case *dnsmessage.AResource:
				got = netip.AddrFrom4(b.A).String()
			case *dnsmessage.AAAAResource:
				got = netip.AddrFrom16(b.AAAA).String()
			}
			if got != tt.answer {
				t.Errorf("%s %v: answer %s; want %s", tt.qname, tt.qtype, got, tt.answer)
			}
		}
	}
}

func TestCache(t *testing.T) {
	dns := startTestDNS(t)
	now := time.Unix(1_000_000, 0)
	cache := NewCache(2)
	cache.now = func() time.Time { return now }
	s := NewServer(Config{Proxy: &UDPUpstream{Outbound: direct.New(nil), Server: addrOf(dns.udp.LocalAddr())}, Cache: cache})
	ctx := context.Background()
	ask := func(name string, id uint16) dnsmessage.Message {
		t.Helper()
		resp, err := s.Handle(ctx, query(t, id, name, dnsmessage.TypeA, 0))
		if err != nil {
			t.Fatal(err)
		}
		m := parse(t, resp)
		if m.ID != id {
			t.Fatalf("ID %d; want %d", m.ID, id)
		}
		return m
	}
	ask("a.example.", 1)
	before := dns.queries.Load()
	now = now.Add(100 * time.Second)
	m := ask("A.example.", 2) // a cache hit, whatever the case
	if dns.queries.Load() != before {
		t.Fatal("cached answer was asked upstream again")
	}
	if len(m.Answers) != 1 || m.Answers[0].Header.TTL != 200 || m.Questions[0].Name.String() != "A.example." {
		t.Fatalf("cached answer %+v; want TTL 300-100 and the query's question", m)
	}
	now = now.Add(200 * time.Second) // expired
	ask("a.example.", 3)
	if dns.queries.Load() != before+1 {
		t.Fatal("expired answer was served from the cache")
	}
	// Negative answers live for the SOA minimum (60 s).
	ask("nx.test.", 4)
	now = now.Add(59 * time.Second)
	ask("nx.test.", 5)
	if dns.queries.Load() != before+2 {
		t.Fatal("NXDOMAIN was not cached")
	}
	now = now.Add(2 * time.Second)
	ask("nx.test.", 6)
	if dns.queries.Load() != before+3 {
		t.Fatal("NXDOMAIN outlived its SOA minimum")
	}
	// Bounded: two entries at most.
	ask("b.example.", 7)
	ask("c.example.", 8)
	if cache.Len() != 2 {
		t.Fatalf("cache holds %d answers; want 2", cache.Len())
	}
}

func TestServeStream(t *testing.T) {
	s := newFakeServer(t, Config{})
	c, srv := net.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.ServeStream(ctx, srv) }()
	// Two pipelined queries and one that is not a query (no answer).
	var out []byte
	for i, q := range [][]byte{query(t, 1, "one.example.", dnsmessage.TypeA, 0), {0, 0, 0x80}, query(t, 2, "two.example.", dnsmessage.TypeAAAA, 0)} {
		_ = i
		out = binary.BigEndian.AppendUint16(out, uint16(len(q)))
		out = append(out, q...)
	}
	go func() { _, _ = c.Write(out) }()
	for _, want := range []uint16{1, 2} {
		var l [2]byte
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.ReadFull(c, l[:]); err != nil {
			t.Fatal(err)
		}
		resp := make([]byte, binary.BigEndian.Uint16(l[:]))
		if _, err := io.ReadFull(c, resp); err != nil {
			t.Fatal(err)
		}
		if m := parse(t, resp); m.ID != want || len(m.Answers) != 1 {
			t.Fatalf("response %+v; want ID %d with one answer", m.Header, want)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != context.Canceled {
			t.Fatalf("ServeStream after cancel: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ServeStream did not stop when ctx ended")
	}
	// A client that closes ends ServeStream cleanly.
	c2, srv2 := net.Pipe()
	go func() { done <- s.ServeStream(context.Background(), srv2) }()
	c2.Close()
	if err := <-done; err != nil {
		t.Fatalf("ServeStream after close: %v", err)
	}
}

func TestHandleAllocs(t *testing.T) {
	s := newFakeServer(t, Config{})
	q := query(t, 1, "www.example.com.", dnsmessage.TypeA, 0)
	ctx := context.Background()
	n := testing.AllocsPerRun(200, func() { _, _ = s.Handle(ctx, q) })
	t.Logf("fake A answer: %v allocations", n)
	if n > 4 {
		t.Errorf("fake A answer: %v allocations; want at most 4", n)
	}
}

func FuzzHandle(f *testing.F) {
	f.Add(query(f, 1, "www.example.com.", dnsmessage.TypeA, 0))
	f.Add(query(f, 2, "x.example.", dnsmessage.TypeAAAA, 1232))
	f.Add(query(f, 3, "2.0.18.198.in-addr.arpa.", dnsmessage.TypePTR, 0))
	f.Add(query(f, 4, "x.example.", dnsmessage.TypeHTTPS, 0))
	f.Add([]byte{0, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xc0, 0x0c})
	p, _ := NewPool(PoolConfig{Size: 16})
	s := NewServer(Config{Pool: p, Mode: func(name string) Mode {
		if strings.HasPrefix(name, "b") {
			return ModeBlock
		}
		return ModeFake
	}})
	f.Fuzz(func(t *testing.T, b []byte) {
		resp, err := s.Handle(context.Background(), b)
		if err != nil {
			return
		}
		checkResponse(t, b, resp, 512)
	})
}

// FuzzCache stores arbitrary upstream responses and serves them back.
func FuzzCache(f *testing.F) {
	for _, qa := range seedExchanges(f) {
		f.Add(qa[1])
	}
	f.Fuzz(func(t *testing.T, resp []byte) {
		c := NewCache(4)
		q := dnsmessage.Question{Name: dnsmessage.MustNewName("a.example."), Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET}
		k := cacheKey{name: "a.example", qtype: q.Type, qclass: q.Class}
		c.put(k, resp)
		if out := c.get(k, 9, true, q); out != nil {
			m := parse(t, out)
			if m.ID != 9 || len(m.Questions) != 1 {
				t.Fatalf("cached response %+v", m.Header)
			}
		}
		_ = matches(query(t, 1, "a.example.", dnsmessage.TypeA, 0), resp)
	})
}

func TestServePacket(t *testing.T) {
	s := newFakeServer(t, Config{})
	srv, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cl, err := net.Dial("udp", srv.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.ServePacket(ctx, srv) }()
	names := []string{"a.example.", "b.example.", "c.example."}
	for i, n := range names {
		if _, err := cl.Write(query(t, uint16(i+1), n, dnsmessage.TypeA, 0)); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[uint16]bool{}
	buf := make([]byte, 512)
	for range names {
		_ = cl.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, err := cl.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		m := parse(t, buf[:n])
		if len(m.Answers) != 1 {
			t.Fatalf("response %+v without an answer", m.Header)
		}
		seen[m.ID] = true
	}
	if len(seen) != len(names) {
		t.Fatalf("answered IDs %v", seen)
	}
	cancel()
	select {
	case err := <-done:
		if err != context.Canceled {
			t.Fatalf("ServePacket after cancel: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ServePacket did not stop when ctx ended")
	}
}

func BenchmarkHandleFake(b *testing.B) {
	p, _ := NewPool(PoolConfig{})
	s := NewServer(Config{Pool: p})
	q := query(b, 1, "www.example.com.", dnsmessage.TypeA, 0)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Handle(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
}
