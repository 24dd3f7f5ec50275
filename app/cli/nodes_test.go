package cli

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/internal/safetext"
)

// TestNodesPrintsNoControls saves names full of terminal escapes straight
// to the profile, as a hand edit or an older version could, and runs the
// real `skiff nodes`: no control byte reaches the output.
func TestNodesPrintsNoControls(t *testing.T) {
	dir := t.TempDir()
	const evil = "\x1b[2J\a\x1b]0;owned\a\u009b31m\u202eJP 01\r\n"
	p := profile.New()
	p.Subscriptions = []*profile.Subscription{{ID: "s1", URL: "https://example.com/s", Title: evil}}
	p.Nodes = []*profile.Node{
		{ID: "n1", Subscription: "s1", Config: node.Node{Name: evil, Protocol: node.Trojan, Server: "jp.example.com", Port: 443,
			Trojan: &node.TrojanOptions{Password: "pw"}, TLS: &node.TLS{SNI: "jp\x1b[1m.example.com"},
			Transport: &node.Transport{Type: node.TransportWS, Path: "/\x1b]0;t\a"}}},
		{ID: "n2", Rename: "\u009b" + evil, Config: node.Node{Name: "x", Protocol: node.Trojan, Server: "hk.example.com", Port: 443,
			Trojan: &node.TrojanOptions{Password: "pw"}}},
	}
	p.Selected = "n1"
	store, err := profile.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Save(p); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"nodes", "--config-dir", dir}, {"nodes", "--json", "--config-dir", dir}} {
		code, out, errOut := runCLI(t, "", args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		// The table shows the name cleaned; JSON keeps it, escaped as
		// JSON escapes (text, not control bytes) save the C1 and bidi
		// runes, which the output drops.
		if !strings.Contains(out, "[2J]0;owned31mJP 01") && !strings.Contains(out, `owned\u000731mJP 01`) {
			t.Errorf("%v: the name is not shown:\n%s", args, out)
		}
		noControls(t, out)
	}
}

// noControls fails when out holds a byte or rune a terminal acts on,
// other than newline and tab.
func noControls(t *testing.T, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Errorf("output is not UTF-8: %q", out)
	}
	for i, r := range out {
		if r != '\n' && r != '\t' && safetext.Forbidden(r) {
			t.Errorf("output holds %U at %d: %q", r, i, out)
			return
		}
	}
}
