package sysproxy

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestKDERestores sets KDE's proxy with the real kwriteconfig5/6 (in a
// temporary XDG_CONFIG_HOME, so nobody's kioslaverc is touched) and puts
// back the user's file: their keys as they were, Skiff's keys gone.
func TestKDERestores(t *testing.T) {
	k := kde{tools: tools{run: execRunner}, bus: func() error { return nil }}
	write, read, err := k.programs()
	if err != nil {
		t.Skipf("%v (make deps installs libkf5config-bin)", err)
	}
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	t.Setenv("HOME", cfg)
	rc := filepath.Join(cfg, "kioslaverc")
	user := "[Proxy Settings]\nProxyType=0\nNoProxyFor=intranet.corp.example\n\n[Other]\nKeep=1\n"
	if err := os.WriteFile(rc, []byte(user), 0o600); err != nil {
		t.Fatal(err)
	}
	p := &Proxy{path: filepath.Join(t.TempDir(), StateName), stores: []store{k}}
	if _, err := p.Enable(context.Background(), Config{Addr: testAddr}); err != nil {
		t.Fatal(err)
	}
	get := func(key string) string {
		out, err := exec.Command(read, "--file", "kioslaverc", "--group", kdeGroup, "--key", key).Output()
		if err != nil {
			t.Fatalf("%s: %v", read, err)
		}
		return strings.TrimSpace(string(out))
	}
	for key, want := range map[string]string{"ProxyType": "1", "httpProxy": "http://127.0.0.1 7890", "socksProxy": "socks://127.0.0.1 7890", "NoProxyFor": strings.Join(DefaultBypass, ",")} {
		if got := get(key); got != want {
			t.Errorf("%s = %q, want %q (%s)", key, got, want, write)
		}
	}
	if err := p.Disable(context.Background()); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"ProxyType": "0", "NoProxyFor": "intranet.corp.example", "httpProxy": "", "httpsProxy": "", "socksProxy": "", "ReversedException": ""} {
		if got := get(key); got != want {
			t.Errorf("after Disable %s = %q, want %q", key, got, want)
		}
	}
	b, _ := os.ReadFile(rc)
	if strings.Contains(string(b), "httpProxy") || !strings.Contains(string(b), "Keep=1") {
		t.Errorf("kioslaverc after Disable:\n%s", b)
	}
}
