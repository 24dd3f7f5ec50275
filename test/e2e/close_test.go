package e2e

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/test/harness"
)

// closeBound is how soon a close must cross the proxy: well under
// relay.HalfCloseIdle (2 s), so that a close that was lost and only
// timed out shows as a failure. On loopback it takes milliseconds.
const closeBound = time.Second

// halfCloseIdle is relay.HalfCloseIdle: a flow over a transport without
// half-close ends this long after the app's side closed.
const halfCloseIdle = 2 * time.Second

// closeExpect is what a server implementation does with closes over one
// protocol, where it is less than passing each on at once.
type closeExpect struct {
	// lingers says why the app's close (or half-close) reaches the
	// target only when skiff's relay gives up on the flow, within
	// relay.HalfCloseIdle: the transport has no half-close (WebSocket), or
	// the server does not pass it on. Empty: at once.
	lingers string
	// noAnswer says why an answer the target sends after the app's
	// half-close does not reach the app (the server ends the flow on the
	// client's EOF). Empty: it must arrive.
	noAnswer string
	// ignored says why the server passes no close of the app's on at all,
	// not even the end of the whole flow (a server bug: the target's side
	// stays open until the server's idle time-out). The checks then ask
	// only that skiff's side ends.
	ignored string
	// serverWait is how long the server itself holds a flow once one
	// direction has ended, and why.
	serverWait time.Duration
	waitWhy    string
}

// Xray passes no half-close on: once one direction of a flow has ended
// it ends the whole flow after its policy's uplinkOnly or downlinkOnly,
// 1 s each by default (app/policy), which servers keep.
const (
	xrayPolicyWait = time.Second
	xrayWaitWhy    = "Xray ends a flow uplinkOnly/downlinkOnly (1 s by default) after one direction ended"
)

// sing-box v1.14.1 ends a proxied connection once the client's side has
// ended, so nothing the destination answers after that EOF comes back;
// sing-box's own client shows the same (SKIFF_E2E_CLIENT=sing-box).
const singBoxNoAnswer = "sing-box's server ends the flow on the client's EOF"

// Xray, too, ends the whole flow on the client's EOF (after serverWait).
const xrayNoAnswer = "Xray ends the flow after the client's EOF"

// wsLingers: a WebSocket stream has no half-close, and an app's close is
// a FIN like a half-close's, so the relay waits for the reply.
const wsLingers = "WebSocket carries no half-close"

// AnyTLS's FIN ends a stream both ways: the protocol has no half-close.
const anyTLSLingers = "AnyTLS has no half-close (its FIN ends the stream)"

// sing-box's VMess server does not pass the end chunk on (relay.SoftCloser).
const vmessSingBoxLingers = "sing-box's VMess server ignores the end chunk"

// closeExpectFor is what to expect of impl over kind.
func closeExpectFor(impl serverImpl, kind harness.Kind) closeExpect {
	var e closeExpect
	vmess := kind == harness.VMessTCP || kind == harness.VMessTLS || kind == harness.VMessWS || kind == harness.VMessH2
	switch {
	case kind.UsesWS():
		e.lingers = wsLingers
	case kind == harness.AnyTLS:
		e.lingers = anyTLSLingers
	case vmess && impl == singBox:
		e.lingers = vmessSingBoxLingers
	}
	if impl == singBox {
		e.noAnswer = singBoxNoAnswer
	}
	if impl == xray {
		e.serverWait, e.waitWhy = xrayPolicyWait, xrayWaitWhy
		e.noAnswer = xrayNoAnswer
	}
	return e
}

// TestClose runs the close checks over the sing-box setups that
// TestInterop does not cover.
func TestClose(t *testing.T) {
	skipIfSingBoxClient(t)
	inMatrix := map[string]bool{}
	for _, ic := range interopCases {
		inMatrix[ic.su.name] = true
	}
	for _, su := range setups {
		if inMatrix[su.name] {
			continue
		}
		t.Run(su.name, func(t *testing.T) {
			t.Parallel()
			s := newServer(t, su)
			startServer(t, s)
			proxy := startClient(t, s)
			testCloses(t, proxy, closeExpectFor(singBox, su.kind))
		})
	}
}

// testCloses checks that a close crosses the proxy at proxy at once in
// both directions, and a half-close from the app, as far as e allows.
func testCloses(t *testing.T, proxy string, e closeExpect) {
	t.Run("server-closes", func(t *testing.T) { testServerCloses(t, proxy, e) })
	t.Run("app-closes", func(t *testing.T) { testAppCloses(t, proxy, e) })
	t.Run("app-half-closes", func(t *testing.T) { testAppHalfCloses(t, proxy, e) })
}

// closeBoundFor is how long the target may wait for the app's close.
func closeBoundFor(t *testing.T, e closeExpect) time.Duration {
	bound := closeBound + serverWait(t, e)
	if why := e.lingers + e.ignored; why != "" {
		t.Logf("known: %s: the close may take relay.HalfCloseIdle", why)
		bound += halfCloseIdle
	}
	return bound
}

// serverWait is e.serverWait, logged.
func serverWait(t *testing.T, e closeExpect) time.Duration {
	if e.serverWait > 0 {
		t.Logf("known: %s: the close may take %v more", e.waitWhy, e.serverWait)
	}
	return e.serverWait
}

// closeTarget serves one connection at a time with handle and returns its
// address.
func closeTarget(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	s, err := harness.ServeTCP(handle)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.Addr()
}

func dialThrough(t *testing.T, proxy, target string) net.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := harness.DialSOCKS(ctx, proxy, target)
	if err != nil {
		t.Fatalf("socks connect to %s: %v", target, err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return c
}

// testServerCloses: the target answers a request and closes (an HTTP
// server answering Connection: close); the app, reading to the end, must
// see EOF right after the answer.
func testServerCloses(t *testing.T, proxy string, e closeExpect) {
	const answer = "HTTP/1.0 200 OK\r\nConnection: close\r\n\r\nbye"
	target := closeTarget(t, func(c net.Conn) {
		if _, err := io.ReadFull(c, make([]byte, 4)); err != nil {
			return
		}
		io.WriteString(c, answer)
		// returning closes c
	})
	c := dialThrough(t, proxy, target)
	if _, err := io.WriteString(c, "ping"); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(answer))
	if _, err := io.ReadFull(c, got); err != nil || string(got) != answer {
		t.Fatalf("answer: %q, %v", got, err)
	}
	start := time.Now()
	n, err := c.Read(make([]byte, 10))
	waited := time.Since(start)
	if n != 0 || err != io.EOF {
		t.Fatalf("after the answer: %d bytes, %v after %v; want EOF", n, err, waited.Round(time.Millisecond))
	}
	if bound := closeBound + serverWait(t, e); waited > bound {
		t.Fatalf("EOF came %v after the answer, want under %v: the server's close did not cross", waited.Round(time.Millisecond), bound)
	}
	t.Logf("EOF %v after the answer", waited.Round(time.Microsecond))
}

// testAppCloses: the app closes its connection; the target must see EOF
// (or a reset) at once.
func testAppCloses(t *testing.T, proxy string, e closeExpect) {
	got := make(chan struct{})
	ended := make(chan time.Time, 1)
	target := closeTarget(t, func(c net.Conn) {
		if _, err := io.ReadFull(c, make([]byte, 4)); err != nil {
			return
		}
		close(got)
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		io.Copy(io.Discard, c)
		ended <- time.Now()
	})
	c := dialThrough(t, proxy, target)
	if _, err := io.WriteString(c, "ping"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the target never got the request")
	}
	start := time.Now()
	c.Close()
	if e.ignored != "" {
		select {
		case <-ended:
			t.Errorf("known server bug (%s) did not show: remove the mark", e.ignored)
		case <-time.After(closeBoundFor(t, e)):
			t.Logf("known: %s: the target did not see the close", e.ignored)
		}
		return
	}
	select {
	case at := <-ended:
		waited := at.Sub(start)
		if bound := closeBoundFor(t, e); waited > bound {
			t.Fatalf("the target saw the close %v after the app's, want under %v", waited.Round(time.Millisecond), bound)
		}
		t.Logf("the target saw the close %v after the app's", waited.Round(time.Microsecond))
	case <-time.After(10 * time.Second):
		t.Fatal("the target never saw the app's close")
	}
}

// testAppHalfCloses: the app sends a request and shuts down its sending
// half; the target must see EOF at once and its answer must still reach
// the app, followed by EOF, where e allows.
func testAppHalfCloses(t *testing.T, proxy string, e closeExpect) {
	const answer = "answer after the EOF"
	eof := make(chan time.Time, 1)
	target := closeTarget(t, func(c net.Conn) {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		b, err := io.ReadAll(c)
		if e.ignored != "" {
			return // no EOF comes: the test closes c
		}
		if err != nil || string(b) != "ping" {
			t.Errorf("target read %q, %v; want ping and EOF", b, err)
			eof <- time.Time{}
			return
		}
		eof <- time.Now()
		io.WriteString(c, answer)
	})
	c := dialThrough(t, proxy, target)
	if _, err := io.WriteString(c, "ping"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	bound := closeBoundFor(t, e)
	if e.ignored != "" {
		// skiff's relay gives up on the flow within the bound: the app
		// must see its end, though the target never learns of it.
		c.SetReadDeadline(time.Now().Add(bound))
		if _, err := io.ReadAll(c); err != nil {
			t.Fatalf("known: %s; but the app did not see the flow end within %v: %v", e.ignored, bound, err)
		}
		t.Logf("known: %s: the flow ended on skiff's side", e.ignored)
		return
	}
	select {
	case at := <-eof:
		if at.IsZero() {
			return
		}
		waited := at.Sub(start)
		if waited > bound {
			t.Fatalf("the target saw EOF %v after the app's CloseWrite, want under %v", waited.Round(time.Millisecond), bound)
		}
		t.Logf("the target saw EOF %v after the app's CloseWrite", waited.Round(time.Microsecond))
	case <-time.After(10 * time.Second):
		t.Fatal("the target never saw EOF after the app's CloseWrite")
	}
	b, err := io.ReadAll(c)
	if e.lingers != "" || e.noAnswer != "" {
		// The flow has ended: the answer may be lost, but the app
		// must see the end.
		if err != nil {
			t.Fatalf("after the half-close: %q, %v; want EOF", b, err)
		}
		t.Logf("known: %s%s: answer after the half-close %q", e.lingers, e.noAnswer, b)
		return
	}
	if err != nil || string(b) != answer {
		t.Fatalf("answer after the half-close: %q, %v; want %q and EOF", b, err, answer)
	}
}
