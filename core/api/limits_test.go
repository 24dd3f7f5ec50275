package api

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/profile"
)

// serveOn serves h on n Unix sockets and returns their paths. Each socket
// is one peer: Peer names a request by the socket it came in on, as the
// service names it by the caller's uid.
func serveOn(t *testing.T, h *Handler, n int) []string {
	t.Helper()
	h.o.Peer = func(r *http.Request) string {
		return r.Context().Value(http.LocalAddrContextKey).(net.Addr).String()
	}
	srv := &http.Server{Handler: h}
	t.Cleanup(func() { srv.Close() })
	var socks []string
	dir := t.TempDir()
	for i := range n {
		sock := filepath.Join(dir, fmt.Sprintf("peer%d.sock", i))
		ln, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		go srv.Serve(ln)
		socks = append(socks, sock)
	}
	return socks
}

func newLocal(t *testing.T) *Local {
	t.Helper()
	store, err := profile.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	l := NewLocal(core.NewController(core.Options{LogOutput: io.Discard}), store, nil)
	t.Cleanup(func() { l.Close() })
	return l
}

// rawRequest sends head (and no body) on a new connection to sock and
// returns the connection and a reader of the answer.
func rawRequest(t *testing.T, sock, head string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, head); err != nil {
		t.Fatal(err)
	}
	return c, bufio.NewReader(c)
}

// status reads the status code of an answer, within d.
func status(t *testing.T, c net.Conn, br *bufio.Reader, d time.Duration) int {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(d))
	defer c.SetReadDeadline(time.Time{})
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0
	}
	return resp.StatusCode
}

// TestTrickledBody: a body sent a byte at a time is cut off at the body
// timeout and its connection closed, rather than held for as long as the
// client trickles (2000 such connections were held).
func TestTrickledBody(t *testing.T) {
	h := NewHandler(newLocal(t), HandlerOptions{})
	h.bodyTimeout = 500 * time.Millisecond
	sock := serveOn(t, h, 1)[0]
	c, br := rawRequest(t, sock, "PUT /v1/profile HTTP/1.1\r\nHost: skiff\r\nContent-Length: 100000\r\n\r\n{")
	start := time.Now()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			if _, err := c.Write([]byte(" ")); err != nil {
				return
			}
		}
	}()
	if code := status(t, c, br, 5*time.Second); code != http.StatusBadRequest {
		t.Errorf("trickled body: status %d, want 400", code)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.Copy(io.Discard, br); err != nil {
		t.Errorf("the connection was not closed: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("closed after %v, want about %v", d, h.bodyTimeout)
	}
}

// TestOversizedBody: a body announced over the limit is refused (413)
// before it is read; the client need not send a byte of it.
func TestOversizedBody(t *testing.T) {
	sock := serveOn(t, NewHandler(newLocal(t), HandlerOptions{}), 1)[0]
	c, br := rawRequest(t, sock, fmt.Sprintf("PUT /v1/profile HTTP/1.1\r\nHost: skiff\r\nContent-Length: %d\r\n\r\n", maxProfile+1))
	if code := status(t, c, br, 3*time.Second); code != http.StatusRequestEntityTooLarge {
		t.Errorf("status %d, want 413 before the body is sent", code)
	}
}

func TestByteBudget(t *testing.T) {
	b := newByteBudget(10)
	ctx := context.Background()
	if err := b.acquire(ctx, 6); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := b.acquire(short, 6); err == nil {
		t.Fatal("12 of 10 bytes taken")
	}
	got := make(chan error, 1)
	go func() { got <- b.acquire(ctx, 6) }()
	select {
	case <-got:
		t.Fatal("taken before the release")
	case <-time.After(50 * time.Millisecond):
	}
	b.release(6)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if err := b.acquire(ctx, 4); err != nil {
		t.Fatal(err)
	}
}

// openWatch opens a watch stream on sock that is never read past its
// status line, and returns its status.
func openWatch(t *testing.T, sock, query string) (net.Conn, int) {
	c, br := rawRequest(t, sock, "GET /v1/watch"+query+" HTTP/1.1\r\nHost: skiff\r\n\r\n")
	return c, status(t, c, br, 5*time.Second)
}

// TestWatchPerPeer runs the lock-out of issue 28: one peer opens 64 watch
// streams and never reads them. It gets its share; another peer's window
// still gets a stream.
func TestWatchPerPeer(t *testing.T) {
	h := NewHandler(newLocal(t), HandlerOptions{})
	socks := serveOn(t, h, 2)
	opened := 0
	for range 64 {
		if _, code := openWatch(t, socks[0], ""); code == http.StatusOK {
			opened++
		}
	}
	if opened != maxPeerWatchers {
		t.Errorf("one peer opened %d streams, want %d", opened, maxPeerWatchers)
	}
	if _, code := openWatch(t, socks[1], ""); code != http.StatusOK {
		t.Errorf("another peer's watch: status %d, want 200", code)
	}
}

// flood is a backend whose watch streams notices of 64 KiB as fast as
// they are taken.
type flood struct{ Backend }

func (f flood) Watch(ctx context.Context, _ WatchOptions) (<-chan Notice, error) {
	ch := make(chan Notice)
	msg := strings.Repeat("x", 64<<10)
	go func() {
		defer close(ch)
		for {
			select {
			case <-ctx.Done():
				return
			case ch <- Notice{Kind: NoticeLog, Message: msg}:
			}
		}
	}()
	return ch, nil
}

// TestUnreadWatchDropped: a stream whose reader takes nothing is ended at
// its write deadline, and its slot is free again.
func TestUnreadWatchDropped(t *testing.T) {
	h := NewHandler(flood{newLocal(t)}, HandlerOptions{})
	h.watchWriteTimeout = 300 * time.Millisecond
	sock := serveOn(t, h, 1)[0]
	var conns []net.Conn
	for range maxPeerWatchers {
		c, code := openWatch(t, sock, "")
		if code != http.StatusOK {
			t.Fatalf("watch: status %d", code)
		}
		conns = append(conns, c)
	}
	// Every slot is free again once the peer can open as many streams as
	// at first: all unread ones were dropped. (Reading one of them before
	// that would let its writes through and keep it alive.)
	deadline := time.Now().Add(10 * time.Second)
	for {
		var fresh []net.Conn
		for range maxPeerWatchers {
			c, code := openWatch(t, sock, "")
			if code != http.StatusOK {
				c.Close()
				break
			}
			fresh = append(fresh, c)
		}
		for _, c := range fresh {
			c.Close()
		}
		if len(fresh) == maxPeerWatchers {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the unread streams still hold slots")
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The unread streams were closed by the service.
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.Copy(io.Discard, c); err != nil {
			t.Errorf("an unread stream was not closed: %v", err)
			break
		}
	}
}

// slowImport is a backend whose Import waits until it is let go.
type slowImport struct {
	Backend
	in, out chan struct{}
}

func (s slowImport) Import(ctx context.Context, _ ImportRequest) (*ImportResult, error) {
	s.in <- struct{}{}
	<-s.out
	return &ImportResult{}, nil
}

// TestBodyShareCut: a chunked body (no length) reserves the route's
// maximum while it is read, then only what it was: an import of a URL
// whose fetch is slow does not hold 32 MiB of the budget meanwhile.
func TestBodyShareCut(t *testing.T) {
	b := slowImport{newLocal(t), make(chan struct{}), make(chan struct{})}
	h := NewHandler(b, HandlerOptions{})
	sock := serveOn(t, h, 1)[0]
	body := `{"url":"https://sub.example/s"}`
	c, br := rawRequest(t, sock, fmt.Sprintf("POST /v1/import HTTP/1.1\r\nHost: skiff\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", len(body), body))
	<-b.in
	h.bodies.mu.Lock()
	held := maxInFlight - h.bodies.free
	h.bodies.mu.Unlock()
	close(b.out)
	if held != int64(len(body)) {
		t.Errorf("a %d-byte chunked import holds %d bytes of the budget while it runs", len(body), held)
	}
	if code := status(t, c, br, 5*time.Second); code != http.StatusOK {
		t.Errorf("import: status %d", code)
	}
	time.Sleep(50 * time.Millisecond)
	h.bodies.mu.Lock()
	defer h.bodies.mu.Unlock()
	if h.bodies.free != maxInFlight {
		t.Errorf("after the request %d bytes are still held", maxInFlight-h.bodies.free)
	}
}

// TestOversizedBodyClient: a Go client that sends a body over the limit
// gets the 413 answer, not a broken pipe, though the service stops
// reading at once.
func TestOversizedBodyClient(t *testing.T) {
	sock := serveOn(t, NewHandler(newLocal(t), HandlerOptions{}), 1)[0]
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	for _, tc := range []struct {
		method, path string
		n            int
	}{
		{"POST", "/v1/connect", 1 << 20},
		{"PUT", "/v1/profile", maxProfile + 1<<20},
	} {
		req, _ := http.NewRequest(tc.method, "http://skiff"+tc.path, strings.NewReader(strings.Repeat(" ", tc.n)))
		resp, err := hc.Do(req)
		if err != nil {
			t.Errorf("%s %s of %d bytes: %v, want a 413", tc.method, tc.path, tc.n, err)
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("%s %s of %d bytes: status %d, want 413", tc.method, tc.path, tc.n, resp.StatusCode)
		}
	}
}
