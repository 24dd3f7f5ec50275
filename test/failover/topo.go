package failover

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// nsPrefix starts the name of every namespace this package creates; the
// process id follows, so that a stale pair left by a killed run can be
// recognised and removed.
const nsPrefix = "skf-fo-"

// Topology is a client and a server network namespace joined by a veth
// pair. Inside the server namespace the origin listens on OriginIP (on its
// loopback device, unreachable from the client namespace), and each proxy
// server sends its egress from an address of its own (EgressHy2,
// EgressVLESS), so the origin can tell which member carried a request.
type Topology struct {
	Client, Server string // namespace names

	ClientIP, ServerIP netip.Addr // the veth ends
	OriginIP           netip.Addr // the HTTP origin, in the server namespace
	EgressHy2          netip.Addr // source of the Hysteria2 server's connections to the origin
	EgressVLESS        netip.Addr // source of the VLESS server's connections to the origin
}

// NewTopology creates the two namespaces and their link for t and removes
// them in t.Cleanup, also when t fails.
func NewTopology(t testing.TB) *Topology {
	t.Helper()
	removeStale()
	pid := strconv.Itoa(os.Getpid())
	topo := &Topology{
		Client:      nsPrefix + "c-" + pid,
		Server:      nsPrefix + "s-" + pid,
		ClientIP:    netip.MustParseAddr("10.201.0.1"),
		ServerIP:    netip.MustParseAddr("10.201.0.2"),
		OriginIP:    netip.MustParseAddr("10.202.0.1"),
		EgressHy2:   netip.MustParseAddr("10.202.0.2"),
		EgressVLESS: netip.MustParseAddr("10.202.0.3"),
	}
	for _, ns := range []string{topo.Client, topo.Server} {
		if err := run("ip", "netns", "add", ns); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := run("ip", "netns", "del", ns); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		})
	}
	steps := [][]string{
		{"ip", "-n", topo.Client, "link", "set", "lo", "up"},
		{"ip", "-n", topo.Server, "link", "set", "lo", "up"},
		{"ip", "-n", topo.Client, "link", "add", "veth0", "type", "veth", "peer", "name", "veth0", "netns", topo.Server},
		{"ip", "-n", topo.Client, "addr", "add", topo.ClientIP.String() + "/30", "dev", "veth0"},
		{"ip", "-n", topo.Server, "addr", "add", topo.ServerIP.String() + "/30", "dev", "veth0"},
		{"ip", "-n", topo.Client, "link", "set", "veth0", "up"},
		{"ip", "-n", topo.Server, "link", "set", "veth0", "up"},
		{"ip", "-n", topo.Server, "addr", "add", topo.OriginIP.String() + "/24", "dev", "lo"},
		{"ip", "-n", topo.Server, "addr", "add", topo.EgressHy2.String() + "/24", "dev", "lo"},
		{"ip", "-n", topo.Server, "addr", "add", topo.EgressVLESS.String() + "/24", "dev", "lo"},
		// A default route into a veth whose peer is a dead end: clients
		// that watch for a default interface (sing-box pauses its urltest
		// checks without one) see a normal network, and the origin stays
		// reachable only through the proxy.
		{"ip", "-n", topo.Client, "link", "add", "dflt", "type", "veth", "peer", "name", "dflt-end"},
		{"ip", "-n", topo.Client, "link", "set", "dflt", "up"},
		{"ip", "-n", topo.Client, "link", "set", "dflt-end", "up"},
		{"ip", "-n", topo.Client, "route", "add", "default", "dev", "dflt"},
	}
	for _, s := range steps {
		if err := run(s[0], s[1:]...); err != nil {
			t.Fatal(err)
		}
	}
	return topo
}

// Member names which server carried a request, from the source address the
// origin saw; "" when it was neither.
func (topo *Topology) Member(src netip.Addr) string {
	switch src {
	case topo.EgressHy2:
		return "hysteria2"
	case topo.EgressVLESS:
		return "vless"
	}
	return ""
}

// Exec returns the argument list that runs bin with args in namespace ns.
func Exec(ns, bin string, args ...string) []string {
	return append([]string{"netns", "exec", ns, bin}, args...)
}

// InNS runs fn on an OS thread that has joined namespace ns, so that the
// sockets fn creates live there (a socket stays in its namespace whatever
// thread uses it later). The thread is thrown away afterwards rather than
// returned to the scheduler in another namespace.
func InNS(ns string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with this goroutine
		f, err := os.Open(filepath.Join("/run/netns", ns))
		if err != nil {
			errc <- fmt.Errorf("netns %s: %w", ns, err)
			return
		}
		err = unix.Setns(int(f.Fd()), unix.CLONE_NEWNET)
		f.Close()
		if err != nil {
			errc <- fmt.Errorf("netns %s: setns: %w", ns, err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// run runs a command and returns its output in the error when it fails.
func run(bin string, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", bin, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// RunInput runs a command with input on its standard input.
func RunInput(input string, bin string, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdin = strings.NewReader(input)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s\ninput:\n%s", bin, strings.Join(args, " "), err, strings.TrimSpace(string(out)), input)
	}
	return nil
}

var staleNS = regexp.MustCompile(`^` + nsPrefix + `[cs]-(\d+)$`)

// removeStale deletes namespaces of this package whose creating process
// is gone (a run killed before its cleanup).
func removeStale() {
	entries, _ := os.ReadDir("/run/netns")
	for _, e := range entries {
		m := staleNS.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		pid, _ := strconv.Atoi(m[1])
		if pid == os.Getpid() || syscall.Kill(pid, 0) == nil {
			continue
		}
		run("ip", "netns", "del", e.Name())
	}
}

// Root reports whether the tests can create namespaces.
func Root() bool { return os.Geteuid() == 0 }
