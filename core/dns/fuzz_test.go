package dns

import (
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// replyUpstream answers every query with a fixed message whose ID it sets
// to the query's, as a server that echoes the ID but lies about the rest.
type replyUpstream struct{ resp []byte }

func (u replyUpstream) Exchange(_ context.Context, msg []byte) ([]byte, error) {
	out := bytes.Clone(u.resp)
	if len(out) >= 2 && len(msg) >= 2 {
		out[0], out[1] = msg[0], msg[1]
	}
	return out, nil
}

// checkResponse fails unless resp is a response to query that fits in
// limit bytes.
func checkResponse(t *testing.T, query, resp []byte, limit int) {
	t.Helper()
	var p dnsmessage.Parser
	h, err := p.Start(resp)
	if err != nil {
		t.Fatalf("unparsable response %x: %v", resp, err)
	}
	if !h.Response || h.ID != binary.BigEndian.Uint16(query) {
		t.Fatalf("response header %+v to query ID %d", h, binary.BigEndian.Uint16(query))
	}
	if len(resp) > limit {
		t.Fatalf("response of %d bytes, over %d", len(resp), limit)
	}
}

// seedExchanges returns queries and the test server's answers to them:
// an address, NXDOMAIN with an SOA, an answer over 512 bytes, and an MX
// answer to a query with an EDNS record.
func seedExchanges(t testing.TB) [][2][]byte {
	dns := &testDNS{}
	var out [][2][]byte
	for _, q := range [][]byte{
		query(t, 1, "a.example.", dnsmessage.TypeA, 0),
		query(t, 2, "nx.test.", dnsmessage.TypeA, 0),
		query(t, 3, "big.test.", dnsmessage.TypeTXT, 0),
		query(t, 4, "a.example.", dnsmessage.TypeMX, 1232),
	} {
		resp, _ := dns.answer(q)
		out = append(out, [2][]byte{q, resp})
	}
	return out
}

// FuzzUpstreamResponse forwards a query to an upstream that answers with
// arbitrary bytes, twice (the second from the cache when the first was
// cached). The client always gets a parsable response to its query that
// fits the UDP limit, whatever the upstream said.
func FuzzUpstreamResponse(f *testing.F) {
	for _, qa := range seedExchanges(f) {
		f.Add(qa[0], qa[1])
	}
	f.Add(query(f, 5, "a.example.", dnsmessage.TypeA, 0), []byte{0, 5, 0x81, 0x80, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add(query(f, 6, "a.example.", dnsmessage.TypeA, 0), []byte{0, 6, 0x81, 0x80, 0, 1, 0, 0, 0, 0, 0, 0, 0xc0, 0x0c, 0, 1, 0, 1})
	f.Fuzz(func(t *testing.T, q, resp []byte) {
		s := NewServer(Config{Proxy: replyUpstream{resp}, Cache: NewCache(4), Mode: func(string) Mode { return ModeProxy }})
		// The client's UDP limit: 512 bytes or what its OPT record says.
		limit := 512
		var p dnsmessage.Parser
		if _, err := p.Start(q); err == nil {
			if _, err := p.Question(); err == nil {
				if _, err := p.Question(); err == dnsmessage.ErrSectionDone {
					limit = ednsSize(&p)
				}
			}
		}
		for range 2 {
			out, err := s.Handle(context.Background(), q)
			if err != nil {
				return // not a query
			}
			checkResponse(t, q, out, limit)
		}
	})
}

// streamConn is a DNS-over-TCP peer that sends a fixed byte stream and
// records what it is sent.
type streamConn struct {
	r *bytes.Reader
	w bytes.Buffer
}

func (c *streamConn) Read(p []byte) (int, error)       { return c.r.Read(p) }
func (c *streamConn) Write(p []byte) (int, error)      { return c.w.Write(p) }
func (c *streamConn) Close() error                     { return nil }
func (c *streamConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *streamConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *streamConn) SetDeadline(time.Time) error      { return nil }
func (c *streamConn) SetReadDeadline(time.Time) error  { return nil }
func (c *streamConn) SetWriteDeadline(time.Time) error { return nil }

// framed returns msgs with the 2-byte length prefix of DNS over TCP.
func framed(msgs ...[]byte) []byte {
	var b []byte
	for _, m := range msgs {
		b = binary.BigEndian.AppendUint16(b, uint16(len(m)))
		b = append(b, m...)
	}
	return b
}

// FuzzTCPResponse reads an upstream's DNS-over-TCP answer from arbitrary
// bytes: length prefixes that lie, answers to other queries, truncation.
// What roundTrip returns answers the query, and the query it wrote is
// framed correctly.
func FuzzTCPResponse(f *testing.F) {
	q := query(f, 7, "a.example.", dnsmessage.TypeA, 0)
	dns := &testDNS{}
	right, _ := dns.answer(q)
	stale, _ := dns.answer(query(f, 6, "a.example.", dnsmessage.TypeA, 0))
	f.Add(framed(right))
	f.Add(framed(stale, right))
	f.Add(framed(right)[:len(right)])
	f.Add([]byte{0xff, 0xff, 0, 7})
	f.Add([]byte{0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, stream []byte) {
		c := &streamConn{r: bytes.NewReader(stream)}
		resp, err := roundTrip(context.Background(), c, q)
		if !bytes.Equal(c.w.Bytes(), framed(q)) {
			t.Fatalf("wrote %x for the query", c.w.Bytes())
		}
		if err != nil {
			return
		}
		if !matches(q, resp) {
			t.Fatalf("returned %x, which does not answer the query", resp)
		}
		if len(resp) > len(stream)-2 {
			t.Fatalf("returned %d bytes from a %d-byte stream", len(resp), len(stream))
		}
	})
}

// FuzzServeStream serves arbitrary bytes as a DNS-over-TCP client's
// stream: it must end (at the end of the stream) without panicking, and
// every answer written is framed and answers a query of the stream.
func FuzzServeStream(f *testing.F) {
	f.Add(framed(query(f, 1, "www.example.com.", dnsmessage.TypeA, 0)))
	f.Add(framed(query(f, 2, "x.example.", dnsmessage.TypeAAAA, 1232), query(f, 3, "x.example.", dnsmessage.TypeA, 0)))
	f.Add(framed([]byte{0, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xc0, 0x0c}))
	f.Add([]byte{0xff, 0xff, 0, 1})
	f.Add([]byte{0})
	p, _ := NewPool(PoolConfig{Size: 16})
	s := NewServer(Config{Pool: p})
	f.Fuzz(func(t *testing.T, stream []byte) {
		c := &streamConn{r: bytes.NewReader(stream)}
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = s.ServeStream(context.Background(), c)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("ServeStream hangs on %x", stream)
		}
		ids := map[uint16]bool{}
		for in := stream; len(in) >= 4; {
			n := int(binary.BigEndian.Uint16(in))
			if len(in) < 2+n {
				break
			}
			ids[binary.BigEndian.Uint16(in[2:])] = true
			in = in[2+n:]
		}
		for out := c.w.Bytes(); len(out) > 0; {
			if len(out) < 2 || len(out) < 2+int(binary.BigEndian.Uint16(out)) {
				t.Fatalf("answer framing broken: %x", out)
			}
			n := int(binary.BigEndian.Uint16(out))
			var par dnsmessage.Parser
			h, err := par.Start(out[2 : 2+n])
			if err != nil || !h.Response || !ids[h.ID] {
				t.Fatalf("answer %x (%v) to none of the queries", out[2:2+n], err)
			}
			out = out[2+n:]
		}
	})
}
