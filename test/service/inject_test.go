package service

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// nftPayload is issue 28's device name: through the kill switch's nft
// script it flushed the host's ruleset and redirected root's DNS.
const nftPayload = `x" accept; }; }; flush ruleset; table ip pwn { chain out { type nat hook output priority -100; udp dport 53 redirect to :5353; }; }; table inet skiff_killswitch { chain output { #`

// api sends one request to the service as user (curl on the socket, under
// setpriv, as a member's program would) and returns the HTTP status and
// the body.
func (l *lab) api(t *testing.T, user, method, path, body string) (int, string) {
	t.Helper()
	args := []string{"--reuid", user, "--regid", l.gidOf(user), "--init-groups",
		"curl", "-sS", "--max-time", "30", "--unix-socket", l.socket, "-X", method,
		"-o", "-", "-w", "\n%{http_code}", "http://skiff/v1" + path}
	if body != "" {
		args = append(args, "-H", "Content-Type: application/json", "--data-binary", "@-")
	}
	cmd := exec.Command("setpriv", args...)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.Stdin = strings.NewReader(body)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s as %s: %v: %s", method, path, user, err, out)
	}
	s := strings.TrimRight(string(out), "\n")
	i := strings.LastIndex(s, "\n")
	code, err := strconv.Atoi(s[i+1:])
	if err != nil {
		t.Fatalf("%s %s: no status in %q", method, path, s)
	}
	return code, s[:max(i, 0)]
}

// setTUN changes the profile's TUN settings through the API as user and
// returns the PUT's status and body.
func (l *lab) setTUN(t *testing.T, user string, set map[string]any) (int, string) {
	t.Helper()
	code, body := l.api(t, user, "GET", "/profile", "")
	if code != 200 {
		t.Fatalf("GET /v1/profile: %d %s", code, body)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatal(err)
	}
	p := doc["profile"].(map[string]any)
	settings, _ := p["settings"].(map[string]any)
	if settings == nil {
		settings = map[string]any{}
		p["settings"] = settings
	}
	tunSettings, _ := settings["tun"].(map[string]any)
	if tunSettings == nil {
		tunSettings = map[string]any{}
		settings["tun"] = tunSettings
	}
	for k, v := range set {
		tunSettings[k] = v
	}
	b, _ := json.Marshal(doc)
	return l.api(t, user, "PUT", "/profile", string(b))
}

// system is what an attack must not change in the client namespace: its
// whole nftables ruleset and its links.
func (l *lab) system(t *testing.T) string {
	t.Helper()
	return run(t, "ip", "netns", "exec", l.cli, "nft", "list", "ruleset") +
		run(t, "ip", "-n", l.cli, "-o", "link")
}

func wantRefused(t *testing.T, what string, code int, body, reason string) {
	t.Helper()
	var e struct{ Code, Message string }
	json.Unmarshal([]byte(body), &e)
	if code/100 != 4 || e.Code != "bad_request" || !strings.Contains(e.Message, reason) {
		t.Errorf("%s: %d %s, want 4xx bad_request saying %q", what, code, body, reason)
		return
	}
	t.Logf("%s: %d %s", what, code, body)
}

// TestServiceRefusesTUNNameAttacks runs issue 28's items 1 and 2 against
// the real service as a member of its group:
//
//   - the nft injection as the TUN device name with the kill switch on:
//     PUT /v1/profile is answered 400 bad_request; with a profile that
//     holds it already (as an older Skiff saved it) the service starts
//     with the kill switch for its default device, and POST /v1/connect in
//     TUN mode is answered 400;
//   - a name equal to another program's device (a persistent tun, a tap)
//     is answered 400 at connect, and the device is still there.
//
// Each time the client namespace's nftables ruleset (with a canary table
// that `flush ruleset` would remove) and its links are the same before and
// after.
func TestServiceRefusesTUNNameAttacks(t *testing.T) {
	l := newLab(t)
	canary := "table inet s1canary {\n\tchain out {\n\t\ttype filter hook output priority 10; policy accept;\n\t}\n}\n"
	cmd := exec.Command("ip", "netns", "exec", l.cli, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(canary)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nft: %v %s", err, out)
	}
	svc := l.startService(t)
	t.Cleanup(func() {
		exec.Command("ip", "netns", "exec", l.cli, "nft", "delete", "table", "inet", "skiff_killswitch").Run()
	})
	// A node to connect through; its server need not run: the attacks
	// end before anything dials.
	if code, body := l.api(t, l.member, "POST", "/import", `{"body":"hysteria2://p@`+srvAddr+`:8443/?insecure=1#lab"}`); code != 200 {
		t.Fatalf("import: %d %s", code, body)
	}

	before := l.system(t)
	code, body := l.setTUN(t, l.member, map[string]any{"name": nftPayload, "killSwitch": true})
	wantRefused(t, "PUT /v1/profile with the nft payload", code, body, "device name")
	if after := l.system(t); after != before {
		t.Errorf("the refused PUT changed the system:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	code, body = l.setTUN(t, l.member, map[string]any{"name": "utun9 all\npass out quick all\n#", "killSwitch": true})
	wantRefused(t, "PUT /v1/profile with the pf payload", code, body, "device name")

	// The payload in the saved profile, as an older Skiff let it in.
	svc.Stop()
	path := filepath.Join(l.profileDir, "profile.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	settings, _ := doc["settings"].(map[string]any)
	if settings == nil {
		settings = map[string]any{}
		doc["settings"] = settings
	}
	settings["tun"] = map[string]any{"name": nftPayload, "killSwitch": true}
	raw, _ = json.Marshal(doc)
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	links := run(t, "ip", "-n", l.cli, "-o", "link")
	svc = l.startService(t)
	// The kill switch the profile asks for holds, for the default device,
	// and the payload is nowhere.
	ruleset := run(t, "ip", "netns", "exec", l.cli, "nft", "list", "ruleset")
	if !strings.Contains(ruleset, "table inet s1canary") || strings.Contains(ruleset, "pwn") ||
		!strings.Contains(ruleset, `oifname "skiff0" accept`) || strings.Count(ruleset, "oifname") != 3 {
		t.Errorf("the service's start with the payload saved: the ruleset is\n%s", ruleset)
	}
	if after := run(t, "ip", "-n", l.cli, "-o", "link"); after != links {
		t.Errorf("the service's start changed the links:\nbefore:\n%s\nafter:\n%s", links, after)
	}
	before = l.system(t)
	code, body = l.api(t, l.member, "POST", "/connect", `{"mode":"tun"}`)
	wantRefused(t, "POST /v1/connect with the payload saved", code, body, "device name")
	if after := l.system(t); after != before {
		t.Errorf("the refused connect changed the system:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if !strings.Contains(l.system(t), "table inet s1canary") {
		t.Error("the canary table is gone")
	}

	// Names of other programs' devices.
	run(t, "ip", "-n", l.cli, "tuntap", "add", "mode", "tun", "name", "s1tun0")
	run(t, "ip", "-n", l.cli, "tuntap", "add", "mode", "tap", "name", "s1tap0")
	for _, name := range []string{"s1tun0", "s1tap0"} {
		if code, body := l.setTUN(t, l.member, map[string]any{"name": name, "killSwitch": false}); code/100 != 2 {
			t.Fatalf("PUT /v1/profile with name %s: %d %s", name, code, body)
		}
		before := l.system(t)
		code, body := l.api(t, l.member, "POST", "/connect", `{"mode":"tun"}`)
		wantRefused(t, "POST /v1/connect with the name "+name, code, body, "exists already")
		if code/100 == 2 {
			l.api(t, l.member, "POST", "/disconnect", "")
		}
		if after := l.system(t); after != before {
			t.Errorf("the refused connect (%s) changed the system:\nbefore:\n%s\nafter:\n%s", name, before, after)
		}
		if !strings.Contains(l.system(t), ": "+name+": ") {
			t.Errorf("%s is gone", name)
		}
	}
	svc.Stop()
}
