package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/test/harness"
)

// TestFallbackBehindHysteria2 runs skiff with a group of a Hysteria2
// primary and a Trojan, VMess, TUIC or AnyTLS fallback, each on its own sing-box server.
// Traffic goes through the primary while it is up; once the primary's
// server is killed, new TCP and UDP flows go through the fallback, whose
// server's log shows their destinations.
func TestFallbackBehindHysteria2(t *testing.T) {
	skipIfSingBoxClient(t)
	for _, su := range []setup{trojT, vmessW, tuicN, anyT} {
		t.Run(su.name, func(t *testing.T) {
			primary := newServer(t, hy2)
			primaryProc := startServer(t, primary)
			fallback := newServer(t, su)
			fallbackProc := startServer(t, fallback)
			p, proxy, err := harness.SkiffRun(t, []string{primary.Link(primary.Trusting()), fallback.Link(fallback.Trusting())})
			t.Cleanup(func() {
				p.Stop()
				checkNoSecrets(t, p.Output(), primary)
				checkNoSecrets(t, p.Output(), fallback)
			})
			if err != nil {
				t.Fatal(err)
			}

			before := harness.TCPEcho(t)
			testTCPEchoTo(t, proxy, before, 1<<20)
			if strings.Contains(fallbackProc.Output(), before) || !strings.Contains(primaryProc.Output(), before) {
				t.Fatalf("the flow before the kill did not go through the primary:\nprimary:\n%s\nfallback:\n%s", primaryProc.Output(), fallbackProc.Output())
			}

			primaryProc.Kill()
			after := harness.TCPEcho(t)
			// The group notices the dead primary on the first dials (their
			// QUIC connection times out); every flow must still succeed.
			start := time.Now()
			testTCPEchoTo(t, proxy, after, 16<<20)
			t.Logf("first flow after the kill echoed through the fallback %v after the kill", time.Since(start).Round(time.Millisecond))
			testUDPEcho(t, proxy)
			testHTTPGet(t, proxy)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := fallbackProc.WaitText(ctx, after); err != nil {
				t.Fatalf("the fallback's server never saw %s: %v\n%s", after, err, fallbackProc.Output())
			}
		})
	}
}
