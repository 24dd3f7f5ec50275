package dns

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/outbound"
)

// testDNS is a small authoritative-looking DNS server on loopback, over
// UDP, TCP, TLS and HTTPS, written with dnsmessage. Its answers:
//
//	nx.test.         NXDOMAIN with an SOA (TTL 300, minimum 60)
//	big.test. TXT    40 strings of 100 bytes (over 512 bytes: truncated on UDP without EDNS)
//	* A              192.0.2.1, TTL 300
//	* AAAA           2001:db8::1, TTL 300
//	* MX             10 mail.<name>, TTL 300
//	anything else    empty NOERROR
type testDNS struct {
	udp     net.PacketConn
	tcp     net.Listener
	dot     net.Listener
	https   *httptest.Server
	roots   *x509.CertPool
	queries atomic.Int64
	wg      sync.WaitGroup
}

func startTestDNS(t *testing.T) *testDNS {
	t.Helper()
	s := &testDNS{}
	var err error
	// UDP and TCP on one port, as a real server has them.
	for range 20 {
		if s.tcp, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		if s.udp, err = net.ListenPacket("udp", s.tcp.Addr().String()); err == nil {
			break
		}
		s.tcp.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	s.https = httptest.NewTLSServer(http.HandlerFunc(s.serveHTTP))
	s.roots = x509.NewCertPool()
	s.roots.AddCert(s.https.Certificate())
	tcp2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.dot = tls.NewListener(tcp2, &tls.Config{Certificates: s.https.TLS.Certificates, NextProtos: []string{"dot"}})
	s.wg.Add(3)
	go s.serveUDP()
	go s.serveStreams(s.tcp)
	go s.serveStreams(s.dot)
	t.Cleanup(func() {
		s.udp.Close()
		s.tcp.Close()
		s.dot.Close()
		s.https.Close()
		s.wg.Wait()
	})
	return s
}

func addrOf(a net.Addr) flow.Addr {
	fa, _ := flow.AddrFromNet(a)
	return fa
}

func (s *testDNS) serveUDP() {
	defer s.wg.Done()
	buf := make([]byte, 65535)
	for {
		n, from, err := s.udp.ReadFrom(buf)
		if err != nil {
			return
		}
		resp, limit := s.answer(buf[:n])
		if resp == nil {
			continue
		}
		if len(resp) > limit {
			resp = truncatedWithQuestion(buf[:n])
		}
		_, _ = s.udp.WriteTo(resp, from)
	}
}

// truncatedWithQuestion returns a TC response carrying the query's
// question, so that the client can match it.
func truncatedWithQuestion(query []byte) []byte {
	var p dnsmessage.Parser
	h, _ := p.Start(query)
	q, _ := p.Question()
	h.Response, h.Truncated = true, true
	b := dnsmessage.NewBuilder(nil, h)
	_ = b.StartQuestions()
	_ = b.Question(q)
	out, _ := b.Finish()
	return out
}

func (s *testDNS) serveStreams(ln net.Listener) {
	defer s.wg.Done()
	var conns sync.WaitGroup
	defer conns.Wait()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		conns.Add(1)
		go func() {
			defer conns.Done()
			defer c.Close()
			for {
				var l [2]byte
				if _, err := io.ReadFull(c, l[:]); err != nil {
					return
				}
				q := make([]byte, binary.BigEndian.Uint16(l[:]))
				if _, err := io.ReadFull(c, q); err != nil {
					return
				}
				resp, _ := s.answer(q)
				if resp == nil {
					return
				}
				out := binary.BigEndian.AppendUint16(nil, uint16(len(resp)))
				if _, err := c.Write(append(out, resp...)); err != nil {
					return
				}
			}
		}()
	}
}

func (s *testDNS) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/dns-query" || r.Header.Get("Content-Type") != "application/dns-message" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	q, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	if q[0] != 0 || q[1] != 0 {
		http.Error(w, "DoH queries carry ID 0", http.StatusBadRequest)
		return
	}
	resp, _ := s.answer(q)
	if resp == nil {
		http.Error(w, "bad query", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/dns-message")
	_, _ = w.Write(resp)
}

// answer returns the response to a query and the UDP size its client
// advertised.
func (s *testDNS) answer(query []byte) ([]byte, int) {
	s.queries.Add(1)
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil, 0
	}
	q, err := p.Question()
	if err != nil {
		return nil, 0
	}
	limit := 512
	_ = p.SkipAllQuestions()
	_ = p.SkipAllAnswers()
	_ = p.SkipAllAuthorities()
	for {
		rh, err := p.AdditionalHeader()
		if err != nil {
			break
		}
		if rh.Type == dnsmessage.TypeOPT {
			limit = max(limit, int(rh.Class))
		}
		_ = p.SkipAdditional()
	}
	rh := dnsmessage.Header{ID: h.ID, Response: true, RecursionDesired: h.RecursionDesired, RecursionAvailable: true}
	name := strings.ToLower(q.Name.String())
	if name == "nx.test." {
		rh.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, rh)
	b.EnableCompression()
	_ = b.StartQuestions()
	_ = b.Question(q)
	_ = b.StartAnswers()
	hdr := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 300}
	switch {
	case name == "nx.test.":
		_ = b.StartAuthorities()
		_ = b.SOAResource(dnsmessage.ResourceHeader{Name: dnsmessage.MustNewName("test."), Class: dnsmessage.ClassINET, TTL: 300},
			dnsmessage.SOAResource{NS: dnsmessage.MustNewName("ns.test."), MBox: dnsmessage.MustNewName("h.test."), MinTTL: 60})
	case name == "big.test." && q.Type == dnsmessage.TypeTXT:
		for range 40 {
			_ = b.TXTResource(hdr, dnsmessage.TXTResource{TXT: []string{strings.Repeat("x", 100)}})
		}
	case q.Type == dnsmessage.TypeA:
		_ = b.AResource(hdr, dnsmessage.AResource{A: [4]byte{192, 0, 2, 1}})
	case q.Type == dnsmessage.TypeAAAA:
		_ = b.AAAAResource(hdr, dnsmessage.AAAAResource{AAAA: [16]byte{0x20, 0x01, 0x0d, 0xb8, 15: 1}})
	case q.Type == dnsmessage.TypeMX:
		_ = b.MXResource(hdr, dnsmessage.MXResource{Pref: 10, MX: dnsmessage.MustNewName("mail." + name)})
	}
	out, err := b.Finish()
	if err != nil {
		return nil, 0
	}
	return out, limit
}

// resolver returns a Go resolver that asks this server.
func (s *testDNS) resolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		if strings.HasPrefix(network, "udp") {
			return d.DialContext(ctx, network, s.udp.LocalAddr().String())
		}
		return d.DialContext(ctx, network, s.tcp.Addr().String())
	}}
}

// redirectOutbound records the destinations it is asked for and sends
// named ones to loopback addresses, so that a test can check that a name
// reaches the outbound unresolved.
type redirectOutbound struct {
	outbound.Outbound
	to map[string]flow.Addr

	mu   sync.Mutex
	seen []flow.Addr
}

func (o *redirectOutbound) DialContext(ctx context.Context, network string, dst flow.Addr) (net.Conn, error) {
	o.mu.Lock()
	o.seen = append(o.seen, dst)
	o.mu.Unlock()
	if dst.IsName() {
		to, ok := o.to[dst.Name]
		if !ok {
			return nil, errors.New("no such test host")
		}
		dst = to
	}
	return o.Outbound.DialContext(ctx, network, dst)
}

// query builds a DNS query.
func query(t testing.TB, id uint16, name string, typ dnsmessage.Type, ednsSize uint16) []byte {
	t.Helper()
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: id, RecursionDesired: true})
	_ = b.StartQuestions()
	if err := b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName(name), Type: typ, Class: dnsmessage.ClassINET}); err != nil {
		t.Fatal(err)
	}
	if ednsSize > 0 {
		_ = b.StartAdditionals()
		var rh dnsmessage.ResourceHeader
		if err := rh.SetEDNS0(int(ednsSize), dnsmessage.RCodeSuccess, false); err != nil {
			t.Fatal(err)
		}
		_ = b.OPTResource(rh, dnsmessage.OPTResource{})
	}
	out, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func parse(t testing.TB, resp []byte) dnsmessage.Message {
	t.Helper()
	var m dnsmessage.Message
	if err := m.Unpack(resp); err != nil {
		t.Fatalf("unpacking response: %v", err)
	}
	return m
}
