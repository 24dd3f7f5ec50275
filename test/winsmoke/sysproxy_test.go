package winsmoke

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/test/harness"
)

const inetKey = `HKCU\Software\Microsoft\Windows\CurrentVersion\Internet Settings`

// reg runs Wine's reg.exe in the test's prefix.
func (w *wine) reg(t *testing.T, args ...string) string {
	t.Helper()
	out, _ := w.run(t, "reg", args...)
	return out
}

// regValue is a value of the Internet Settings key as reg query prints it
// ("REG_SZ corp.example:3128"), or "" when it is absent.
func (w *wine) regValue(t *testing.T, name string) string {
	t.Helper()
	return w.regValueOf(t, inetKey, name)
}

// TestSystemProxyRegistry: `skiff.exe run --system-proxy` under Wine sets
// WinINet's ProxyEnable, ProxyServer and ProxyOverride in HKCU (and calls
// InternetSetOption, which Wine's wininet.dll has); after kill -9 they
// still point at the dead port; the next start puts back what the user
// had, an absent value as absent.
func TestSystemProxyRegistry(t *testing.T) {
	w := needWine(t)
	cfg := filepath.Join(t.TempDir(), "config")
	t.Setenv("SKIFF_CONFIG_DIR", winPath(cfg))
	w.reg(t, "add", inetKey, "/v", "ProxyServer", "/t", "REG_SZ", "/d", "proxy.corp.example:3128", "/f")
	w.reg(t, "add", inetKey, "/v", "ProxyEnable", "/t", "REG_DWORD", "/d", "0", "/f")
	w.reg(t, "delete", inetKey, "/v", "ProxyOverride", "/f")
	before := [3]string{w.regValue(t, "ProxyServer"), w.regValue(t, "ProxyEnable"), w.regValue(t, "ProxyOverride")}
	if before != [3]string{"REG_SZ proxy.corp.example:3128", "REG_DWORD 0x0", ""} {
		t.Fatalf("the prefix's settings are not as set: %q", before)
	}

	s := newServer(t, harness.VLESSWS)
	p, proxy := w.start(t, s.Link(s.Trusting()), "--system-proxy")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := p.WaitText(ctx, "system proxy set (wininet)"); err != nil {
		t.Fatalf("%v\n%s", err, p.Output())
	}
	if got := w.regValue(t, "ProxyServer"); got != "REG_SZ "+proxy {
		t.Errorf("ProxyServer %q, want %s", got, proxy)
	}
	if got := w.regValue(t, "ProxyEnable"); got != "REG_DWORD 0x1" {
		t.Errorf("ProxyEnable %q", got)
	}
	if got := w.regValue(t, "ProxyOverride"); !strings.Contains(got, "192.168.*") || !strings.HasSuffix(got, "<local>") {
		t.Errorf("ProxyOverride %q", got)
	}
	p.Kill()
	<-p.Done()
	if got := w.regValue(t, "ProxyServer"); got != "REG_SZ "+proxy {
		t.Fatalf("after kill -9 ProxyServer is %q: nothing should have restored it yet", got)
	}

	p2, _ := w.start(t, s.Link(s.Trusting()))
	if err := p2.WaitText(ctx, "restored the system proxy settings an earlier run left"); err != nil {
		t.Fatalf("%v\n%s", err, p2.Output())
	}
	after := [3]string{w.regValue(t, "ProxyServer"), w.regValue(t, "ProxyEnable"), w.regValue(t, "ProxyOverride")}
	if after != before {
		t.Errorf("after the next start %q, want %q", after, before)
	}
	p2.Stop()
}
