package cli

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skiffvpn/skiff/app/qr"
	"github.com/skiffvpn/skiff/core/profile"
)

const importUUID = "b831381d-6324-4d53-ad4f-8cda48b30811"

var importList = "# nodes\n" +
	"hysteria2://pw@[2001:db8::1]:443/?sni=a.example.com#%E4%B8%9C%E4%BA%AC\n" +
	"vless://" + importUUID + "@b.example.com:443?encryption=none&security=tls&type=ws&path=%2Fws#ws node\n" +
	"trojan://pw@c.example.com:443?type=tcp&headerType=http#trojan node\n" +
	"bogus line\n"

func runCLI(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func TestImportFileStdinAndNodes(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(profile.EnvConfigDir, dir)
	file := filepath.Join(t.TempDir(), "list.txt")
	os.WriteFile(file, []byte(base64.StdEncoding.EncodeToString([]byte(importList))), 0o600)

	code, out, errOut := runCLI(t, "", "import", file)
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	if !strings.Contains(out, "imported 3 nodes") || !strings.Contains(out, `trojan node: tcp header type "http" is not supported yet`) {
		t.Errorf("summary: %s", out)
	}
	if !strings.Contains(errOut, "line 5:") {
		t.Errorf("warnings: %s", errOut)
	}
	if !strings.Contains(out, `as subscription "list.txt"`) {
		t.Errorf("a file's import is not listed under its name: %s", out)
	}
	// The same file again adds nothing new.
	code, out, _ = runCLI(t, "", "import", file)
	if code != 0 || !strings.Contains(out, "imported 0 nodes") || !strings.Contains(out, "3 already present") {
		t.Errorf("re-import: %d %s", code, out)
	}
	// Standard input: nodes added by hand.
	code, out, _ = runCLI(t, "hy2://y@e.example.com:8443#from stdin\n", "import", "-")
	if code != 0 || !strings.Contains(out, "imported 1 nodes from standard input") {
		t.Errorf("stdin import: %d %s", code, out)
	}
	// A link on the command line.
	code, out, _ = runCLI(t, "", "import", "hy2://x@d.example.com:8443#direct")
	if code != 0 || !strings.Contains(out, "imported 1 nodes") {
		t.Errorf("link import: %d %s", code, out)
	}

	code, out, _ = runCLI(t, "", "nodes", "--json")
	if code != 0 {
		t.Fatal(out)
	}
	var list []map[string]any
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 5 {
		t.Fatalf("%d nodes", len(list))
	}
	first := list[0]
	for k, want := range map[string]any{"name": "东京", "protocol": "hysteria2", "server": "2001:db8::1", "port": float64(443), "supported": true} {
		if first[k] != want {
			t.Errorf("%s = %v, want %v", k, first[k], want)
		}
	}
	if tr, _ := list[1]["transport"].(map[string]any); tr["type"] != "ws" || tr["path"] != "/ws" {
		t.Errorf("transport %v", list[1]["transport"])
	}
	if list[2]["supported"] != false || list[2]["reason"] == "" {
		t.Errorf("trojan: %v", list[2])
	}
	if strings.Contains(out, "pw") || strings.Contains(out, importUUID) {
		t.Error("nodes --json prints credentials")
	}

	code, out, _ = runCLI(t, "", "nodes")
	if code != 0 || !strings.Contains(out, "[2001:db8::1]:443") || !strings.Contains(out, "ws /ws") {
		t.Errorf("table:\n%s", out)
	}

	n, err := lookupNode("东京")
	if err != nil || n.Protocol != "hysteria2" || n.Hysteria2.Auth != "pw" {
		t.Errorf("lookupNode: %+v %v", n, err)
	}
	if _, err := lookupNode("trojan node"); err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Errorf("unsupported node: %v", err)
	}
	if _, err := lookupNode("nope"); err == nil {
		t.Error("missing node found")
	}
}

func TestImportFailures(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(profile.EnvConfigDir, dir)
	runCLI(t, "", "import", "hy2://x@d.example.com:8443#keep")
	before, _ := os.ReadFile(filepath.Join(dir, profile.FileName))

	for _, tc := range []struct {
		name, stdin string
		args        []string
		msg         string
	}{
		{"nothing usable", "vless://nope\nfoo://bar\n", []string{"import", "-"}, "no node could be imported"},
		{"prose", "bogus\nalso bogus\n", []string{"import", "-"}, "not a list of share links"},
		{"html", "<!DOCTYPE html><html></html>", []string{"import", "-"}, "web page"},
		{"missing file", "", []string{"import", "/nonexistent/file"}, "no such file"},
		{"truncated json", `{"outbounds": [{"type":`, []string{"import", "-"}, "truncated"},
		{"no args", "", []string{"import"}, "usage"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runCLI(t, tc.stdin, tc.args...)
			if code == 0 {
				t.Fatal("exit 0")
			}
			if !strings.Contains(errOut, tc.msg) {
				t.Errorf("stderr %q lacks %q", errOut, tc.msg)
			}
			after, _ := os.ReadFile(filepath.Join(dir, profile.FileName))
			if !bytes.Equal(before, after) {
				t.Error("profile changed")
			}
		})
	}
}

func TestImportURL(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(profile.EnvConfigDir, dir)
	status := http.StatusOK
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Subscription-Userinfo", "upload=1073741824; download=1073741824; total=10737418240; expire=1893456000")
		w.Header().Set("Profile-Title", "Test Provider")
		w.WriteHeader(status)
		w.Write([]byte(base64.StdEncoding.EncodeToString([]byte(importList))))
	}))
	defer ts.Close()
	url := ts.URL + "/sub?token=SECRET"
	code, out, errOut := runCLI(t, "", "import", url)
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	if !strings.Contains(out, `added subscription "Test Provider"`) || !strings.Contains(out, "2.0 GiB used of 10.0 GiB, 8.0 GiB left") {
		t.Errorf("summary: %s", out)
	}
	// Importing the same URL refreshes it; a failure keeps the nodes.
	status = http.StatusBadGateway
	code, _, errOut = runCLI(t, "", "import", url)
	if code == 0 || !strings.Contains(errOut, "previous nodes are kept") || strings.Contains(errOut, "SECRET") {
		t.Errorf("failed refresh: %d %s", code, errOut)
	}
	s, _ := profile.Open(dir)
	p, _ := s.Load()
	if len(p.Subscriptions) != 1 || len(p.Nodes) != 3 || p.Subscriptions[0].LastError == "" {
		t.Errorf("profile after failed refresh: %d subs, %d nodes", len(p.Subscriptions), len(p.Nodes))
	}
	// A new URL that fails is not kept.
	code, _, _ = runCLI(t, "", "import", ts.URL+"/other")
	p, _ = s.Load()
	if code == 0 || len(p.Subscriptions) != 1 {
		t.Errorf("failed new subscription kept: %d, %d subs", code, len(p.Subscriptions))
	}
}

// TestImportQR: `skiff import --qr IMAGE` imports the link the QR code
// holds; an image without a link, or not an image, is refused and
// nothing is added.
func TestImportQR(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(profile.EnvConfigDir, dir)
	write := func(name, text string) string {
		t.Helper()
		png, err := qr.PNG(text, 256)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, png, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	link := "hysteria2://pw@qr.example.com:443/?sni=qr.example.com#from a picture"
	code, out, errOut := runCLI(t, "", "import", "--qr", write("node.png", link))
	if code != 0 || !strings.Contains(out, "imported 1 nodes from the link") {
		t.Fatalf("import --qr: exit %d: %s %s", code, out, errOut)
	}
	notImage := filepath.Join(t.TempDir(), "notes.png")
	os.WriteFile(notImage, []byte("not a picture"), 0o600)
	for _, c := range []struct{ name, path, want string }{
		{"no link", write("word.png", "/etc/passwd"), "holds no link"},
		{"not an image", notImage, "not a PNG, JPEG or GIF"},
		{"missing", filepath.Join(dir, "none.png"), "no such file"},
	} {
		code, _, errOut := runCLI(t, "", "import", "--qr", c.path)
		if code != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: exit %d, %q; want 1 and %q", c.name, code, errOut, c.want)
		}
	}
	p, err := profile.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := p.Load()
	if err != nil {
		t.Fatal(err)
	}
	if n := len(doc.Nodes); n != 1 {
		t.Errorf("%d nodes after the refused imports, want 1", n)
	}
}
