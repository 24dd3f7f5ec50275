package harness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// HysteriaPeerVersion is what the official Hysteria 2 test peer
// (test/peers/hysteria: a main on github.com/apernet/hysteria/core/v2
// v2.7.1's server and client packages) prints for "version". The harness
// rebuilds test/bin/hysteria when the binary there prints anything else;
// change both together.
const HysteriaPeerVersion = "hysteria core v2.7.1 peer 1"

var hysteriaOnce = sync.OnceValues(buildHysteria)

// HysteriaBinary builds the official Hysteria 2 test peer into
// test/bin/hysteria (once per process, and only when the binary there is
// not HysteriaPeerVersion) and returns its path. It is a module of its
// own, so that the apernet quic-go fork it needs never enters test/go.mod.
func HysteriaBinary() (string, error) { return hysteriaOnce() }

// NeedHysteria is HysteriaBinary for tests: it fails t when the build
// fails.
func NeedHysteria(t testing.TB) string {
	t.Helper()
	p, err := HysteriaBinary()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func buildHysteria() (string, error) {
	return buildPeer("hysteria", hysteriaIsCurrent, func(bin, out string) error {
		fmt.Fprintf(os.Stderr, "harness: building the official Hysteria 2 server (%s) into %s\n", HysteriaPeerVersion, bin)
		cmd := exec.Command("go", "build", "-buildvcs=false", "-trimpath", "-o", out, ".")
		cmd.Dir = filepath.Join(filepath.Dir(bin), "peers", "hysteria")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("harness: go build %s: %v\n%s", cmd.Dir, err, b)
		}
		return nil
	})
}

// hysteriaIsCurrent reports whether path is the peer of HysteriaPeerVersion.
func hysteriaIsCurrent(path string) bool {
	b, err := exec.Command(path, "version").Output()
	return err == nil && strings.TrimSpace(string(b)) == HysteriaPeerVersion
}

// HysteriaServerArgs returns the arguments that make the peer serve s (a
// Hysteria2 Server: its port, certificate and password) on 127.0.0.1, or
// on s.LinkHost when set (a server in another network namespace).
// The official server has no Salamander in its core package: s must not
// ask for obfuscation.
func HysteriaServerArgs(s *Server) ([]string, error) {
	if s.Kind != Hysteria2 {
		return nil, fmt.Errorf("harness: the official Hysteria server serves hysteria2, not %q", s.Kind)
	}
	if s.ObfsPassword != "" {
		return nil, fmt.Errorf("harness: the official Hysteria test server runs without obfuscation")
	}
	return []string{"server", "-listen", s.linkAddr(), "-cert", s.Cert.CertFile, "-key", s.Cert.KeyFile, "-password", s.Password}, nil
}

// StartHysteria starts the official Hysteria 2 server serving s for t,
// waits until its socket is open, and stops it in t.Cleanup.
func StartHysteria(t testing.TB, s *Server) *Process {
	t.Helper()
	bin := NeedHysteria(t)
	args, err := HysteriaServerArgs(s)
	if err != nil {
		t.Fatal(err)
	}
	p := Start(t, "hysteria-server", bin, args...)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := p.WaitText(ctx, "hysteria server listening on"); err != nil {
		t.Fatalf("official hysteria server: %v", err)
	}
	return p
}
