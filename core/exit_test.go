package core

import (
	"context"
	"crypto/x509"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/skiffvpn/skiff/core/rule"
)

// traceServer is a local trace service over TLS, and the roots that trust
// it; hits counts its answers.
func traceServer(t *testing.T) (url string, roots *x509.CertPool, hits *atomic.Int32) {
	t.Helper()
	hits = new(atomic.Int32)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.WriteString(w, "fl=1\nip=203.0.113.7\nloc=DE\ntls=TLSv1.3\n")
	}))
	t.Cleanup(srv.Close)
	roots = x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	return srv.URL + "/cdn-cgi/trace", roots, hits
}

func TestExit(t *testing.T) {
	url, roots, hits := traceServer(t)
	c := NewController(Options{LogOutput: io.Discard, ExitSources: []string{url}, ExitRoots: roots})
	ctx := context.Background()
	if _, err := c.Exit(ctx, false); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("Exit while stopped: %v, want ErrNotRunning", err)
	}
	// The check goes the way an app's flow goes: here, by the final rule,
	// through the direct outbound.
	if err := c.Start(ctx, Config{Final: TargetDirect, Listen: "127.0.0.1:0"}); err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	e, err := c.Exit(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if e.IP != netip.MustParseAddr("203.0.113.7") || e.Country != "DE" || e.Via != TargetDirect || e.CheckedAt.IsZero() {
		t.Fatalf("Exit = %+v", e)
	}
	// Kept; a refresh so soon gets the same answer; callers at once share
	// one check.
	for _, refresh := range []bool{false, true} {
		if again, err := c.Exit(ctx, refresh); err != nil || again != e {
			t.Fatalf("Exit(refresh %v) = %+v, %v; want the kept %+v", refresh, again, err, e)
		}
	}
	if n := hits.Load(); n != 1 {
		t.Fatalf("%d checks, want 1", n)
	}
	c.current().exit.forget() // as a switch does
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Exit(ctx, true); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := hits.Load(); n != 2 {
		t.Fatalf("%d checks after a switch and 8 callers at once, want 2", n)
	}

	// A new connection forgets the answer, and the rules decide: here they
	// block the trace service.
	c.Stop()
	block := []rule.Rule{{IPCIDR: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, Target: TargetBlock}}
	if err := c.Start(ctx, Config{Final: TargetDirect, Rules: block, Listen: "127.0.0.1:0"}); err != nil {
		t.Fatal(err)
	}
	if e, err := c.Exit(ctx, false); !errors.Is(err, ErrExitLookup) {
		t.Fatalf("Exit with the service blocked = %+v, %v; want ErrExitLookup", e, err)
	}
	if n := hits.Load(); n != 2 {
		t.Fatalf("the blocked check reached the service (%d checks)", n)
	}
}

func TestExitCallerLeaves(t *testing.T) {
	var e exitCheck
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	go func() {
		<-started
		cancel()
	}()
	_, err := e.get(ctx, false, func(ctx context.Context) (Exit, error) {
		close(started)
		<-ctx.Done()
		return Exit{}, ctx.Err()
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("get = %v, want context.Canceled", err)
	}
	// The abandoned check is not kept: the next caller checks.
	want := Exit{Country: "DE"}
	got, err := e.get(context.Background(), false, func(context.Context) (Exit, error) { return want, nil })
	if err != nil || got != want {
		t.Fatalf("get after an abandoned check = %+v, %v", got, err)
	}
}
