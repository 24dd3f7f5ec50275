package window

import (
	"strings"
	"testing"

	"github.com/skiffvpn/skiff/core/profile"
)

// TestSameTitleSubscriptionsToldApart: two providers both titled "机场"
// are listed under different names.
func TestSameTitleSubscriptionsToldApart(t *testing.T) {
	h := newHarness(t, Prefs{}, func(p *profile.Profile) {
		p.Subscriptions = append(p.Subscriptions,
			&profile.Subscription{ID: "a", Title: "机场", URL: "https://a.example/sub?token=1"},
			&profile.Subscription{ID: "b", Title: "机场", URL: "https://b.example/sub?token=2"})
	})
	v := h.ui.profiles
	seen := map[string]bool{}
	for _, src := range v.sources {
		title, _, _ := v.describeSource(src)
		if seen[title] {
			t.Errorf("%q listed twice in %q", title, v.sources)
		}
		seen[title] = true
	}
	if !seen["机场 (a.example)"] || !seen["机场 (b.example)"] {
		t.Errorf("titles %v", seen)
	}
}

// TestImportWarningsShown: a Clash file whose SSR proxy is dropped says so,
// with the reason, in the window.
func TestImportWarningsShown(t *testing.T) {
	h := newHarness(t, Prefs{}, nil)
	v := h.ui.profiles
	clash := `proxies:
  - {name: ok, type: trojan, server: 127.0.0.1, port: 443, password: pw, sni: a.example}
  - {name: old-ssr, type: ssr, server: 127.0.0.1, port: 8388, cipher: aes-256-cfb, password: pw, protocol: origin, obfs: plain}
`
	v.importBody([]byte(clash), "clash.yaml", "clash.yaml")
	msg := v.status.Text
	if !strings.Contains(msg, "Skipped 1 entry:") || !strings.Contains(msg, "old-ssr") {
		t.Errorf("the import says %q", msg)
	}
	if !v.status.Visible() {
		t.Error("the outcome is hidden")
	}
}
