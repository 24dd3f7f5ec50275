package core

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/group"
	"github.com/skiffvpn/skiff/core/guard"
	"github.com/skiffvpn/skiff/core/inbound/mixed"
	"github.com/skiffvpn/skiff/core/outbound"
	"github.com/skiffvpn/skiff/core/outbound/direct"
	"github.com/skiffvpn/skiff/core/stats"
	"github.com/skiffvpn/skiff/internal/nettest"
)

// panicky is a test-only outbound with a bug: its dial panics, or, with
// inConn, the conn it returns panics on its first Read (a panic on the
// relay's goroutine rather than the flow's).
type panicky struct {
	inConn bool
	dials  atomic.Int64
}

func (p *panicky) DialContext(ctx context.Context, network string, dst flow.Addr) (net.Conn, error) {
	p.dials.Add(1)
	if !p.inConn {
		panic("panicky: dial " + dst.String())
	}
	a, b := net.Pipe()
	go func() { io.Copy(io.Discard, b); b.Close() }()
	return &panicConn{Conn: a}, nil
}

func (p *panicky) ListenPacket(ctx context.Context, dst flow.Addr) (net.PacketConn, error) {
	panic("panicky: listen packet")
}

func (p *panicky) Close() error { return nil }

type panicConn struct{ net.Conn }

func (c *panicConn) Read(b []byte) (int, error) { panic("panicky: read") }

// portRouter sends flows to one port to bad and the rest to good.
type portRouter struct {
	port      uint16
	bad, good outbound.Outbound
}

func (r *portRouter) Route(m *flow.Metadata) (outbound.Outbound, string, error) {
	if m.Destination.Port == r.port {
		return r.bad, "bad", nil
	}
	return r.good, "good", nil
}

// countHandler counts log records at Error level.
type countHandler struct{ n atomic.Int64 }

func (h *countHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelError }
func (h *countHandler) Handle(context.Context, slog.Record) error    { h.n.Add(1); return nil }
func (h *countHandler) WithAttrs([]slog.Attr) slog.Handler           { return h }
func (h *countHandler) WithGroup(string) slog.Handler                { return h }

// panicProxy runs the mixed inbound and the engine with router r and a
// panic reporter that logs into a countHandler.
func panicProxy(t *testing.T, r *portRouter) (addr string, rep *guard.Reporter, logged *countHandler) {
	t.Helper()
	logged = &countHandler{}
	rep = guard.NewReporter(slog.New(logged))
	eng := NewEngine(r, stats.New(), slog.New(slog.DiscardHandler))
	srv, err := mixed.Listen(mixed.Config{Listen: "127.0.0.1:0", Panics: rep}, eng)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv.Addr().String(), rep, logged
}

// echoThrough checks that a SOCKS CONNECT through proxy to echo carries a
// message both ways.
func echoThrough(t *testing.T, proxy, echo string) {
	t.Helper()
	host, port := splitPort(t, echo)
	c, rep, _ := socksRequest(t, proxy, 1, host, port)
	defer c.Close()
	if rep != 0 {
		t.Fatalf("CONNECT to the echo server: reply %d", rep)
	}
	msg := []byte("still serving")
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("echo: %q, %v", got, err)
	}
}

// TestPanickingDialIsOneFlowsFailure: 1,000 flows to an outbound whose dial
// panics are each refused, the process lives on, flows through the other
// outbound keep working while they happen, every panic is counted, and the
// log gets a few lines rather than 1,000 stacks.
func TestPanickingDialIsOneFlowsFailure(t *testing.T) {
	echo := nettest.TCPEcho(t).String()
	bad := &panicky{}
	proxy, rep, logged := panicProxy(t, &portRouter{port: 9, bad: bad, good: direct.New(nil)})

	const n = 1000
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	var refused atomic.Int64
	for range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c, err := net.Dial("tcp", proxy)
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			c.Write([]byte{5, 1, 0, 5, 1, 0, 1, 127, 0, 0, 1, 0, 9})
			var b [4]byte
			if _, err := io.ReadFull(c, b[:2]); err != nil {
				t.Errorf("greeting: %v", err)
				return
			}
			if _, err := io.ReadFull(c, b[:]); err == nil && b[1] != 0 {
				refused.Add(1)
			}
		}()
	}
	// Meanwhile, and after, the good path carries traffic.
	for range 5 {
		echoThrough(t, proxy, echo)
	}
	wg.Wait()
	echoThrough(t, proxy, echo)

	if got := refused.Load(); got != n {
		t.Errorf("%d of %d flows to the panicking outbound got a SOCKS failure reply", got, n)
	}
	if got := rep.Count(); got != n {
		t.Errorf("Count = %d, want %d (dials: %d)", got, n, bad.dials.Load())
	}
	if got := logged.n.Load(); got < 1 || got > 5 {
		t.Errorf("%d panics logged for %d recovered within seconds; want the first and a few more at most", got, n)
	}
}

// TestPanickingMemberFailsOver: in a failover group whose primary panics
// while dialling, every flow is carried by the next member; the panic is
// the primary's failed dial.
func TestPanickingMemberFailsOver(t *testing.T) {
	echo := nettest.TCPEcho(t).String()
	bad := &panicky{}
	probed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(probed.Close)
	g, err := group.New("g", group.Failover, []group.Member{
		{Name: "panicky", Outbound: bad},
		{Name: "direct", Outbound: direct.New(nil)},
	}, group.Options{Policy: group.Policy{ProbeURL: probed.URL}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	proxy, rep, _ := panicProxy(t, &portRouter{good: g})
	for range 20 {
		echoThrough(t, proxy, echo)
	}
	if bad.dials.Load() == 0 || rep.Count() == 0 {
		t.Errorf("the primary was dialled %d times and %d panics were counted; the test did not exercise a panic", bad.dials.Load(), rep.Count())
	}
}

// TestPanickingRelayClosesItsFlow: a panic on the relay's own goroutine (the
// upstream conn's Read) closes that flow; the other flows go on.
func TestPanickingRelayClosesItsFlow(t *testing.T) {
	echo := nettest.TCPEcho(t).String()
	proxy, rep, _ := panicProxy(t, &portRouter{port: 9, bad: &panicky{inConn: true}, good: direct.New(nil)})
	for i := range 10 {
		c, code, _ := socksRequest(t, proxy, 1, "127.0.0.1", 9)
		if code != 0 {
			t.Fatalf("flow %d: reply %d, want success (the dial works, the relay panics)", i, code)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil {
			t.Fatalf("flow %d: read data from a flow whose relay panicked", i)
		} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("flow %d: the flow was left open after its relay panicked", i)
		}
		c.Close()
		echoThrough(t, proxy, echo)
	}
	waitFor(t, func() bool { return rep.Count() >= 10 })
}
