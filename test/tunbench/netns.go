package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// The benchmark's addresses. The client namespace reaches the server
// namespace over a veth pair (veth4/veth6). The sink/source and echo live on
// other addresses of the server namespace (sink4/sink6, public documentation
// ranges), so that a client keeping its server's address and the private
// ranges out of the tunnel still sends the measured traffic through it.
const (
	clientVeth4 = "10.77.0.1/24"
	serverVeth4 = "10.77.0.2/24"
	clientVeth6 = "fd77::1/64"
	serverVeth6 = "fd77::2/64"
	serverIP4   = "10.77.0.2"
	serverIP6   = "fd77::2"
	sinkIP4     = "198.51.100.2"
	sinkIP6     = "2001:db8:77::2"

	sinkPort = 5201 // sink/source (harness.SinkSource)
	echoPort = 5202 // TCP echo, for the many-connection test
)

// topology is the pair of network namespaces the benchmark runs in.
type topology struct {
	client, server string // namespace names
	clientDev      string // veth end in the client namespace
	serverDev      string // veth end in the server namespace
}

// newTopology creates two namespaces named after this process, joins them
// with a veth pair and addresses it. On error it removes what it made.
func newTopology() (*topology, error) {
	pid := os.Getpid()
	t := &topology{
		client:    fmt.Sprintf("skf-tb-c-%d", pid),
		server:    fmt.Sprintf("skf-tb-s-%d", pid),
		clientDev: fmt.Sprintf("tbc%d", pid%1000000),
		serverDev: fmt.Sprintf("tbs%d", pid%1000000),
	}
	steps := [][]string{
		{"netns", "add", t.client},
		{"netns", "add", t.server},
		{"link", "add", t.clientDev, "netns", t.client, "type", "veth", "peer", "name", t.serverDev, "netns", t.server},
		{"-n", t.client, "link", "set", "lo", "up"},
		{"-n", t.server, "link", "set", "lo", "up"},
		{"-n", t.client, "addr", "add", clientVeth4, "dev", t.clientDev},
		{"-n", t.client, "addr", "add", clientVeth6, "dev", t.clientDev, "nodad"},
		{"-n", t.server, "addr", "add", serverVeth4, "dev", t.serverDev},
		{"-n", t.server, "addr", "add", serverVeth6, "dev", t.serverDev, "nodad"},
		{"-n", t.server, "addr", "add", sinkIP4 + "/32", "dev", "lo"},
		{"-n", t.server, "addr", "add", sinkIP6 + "/128", "dev", "lo"},
		{"-n", t.client, "link", "set", t.clientDev, "up"},
		{"-n", t.server, "link", "set", t.serverDev, "up"},
		{"-n", t.client, "route", "add", "default", "via", serverIP4},
		{"-n", t.client, "-6", "route", "add", "default", "via", serverIP6},
	}
	for _, s := range steps {
		if err := ip(s...); err != nil {
			t.close()
			return nil, err
		}
	}
	return t, nil
}

// close deletes both namespaces (and with them the veth pair). It is safe
// to call more than once.
func (t *topology) close() {
	for _, ns := range []string{t.client, t.server} {
		if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil &&
			!strings.Contains(string(out), "No such file") {
			fmt.Fprintf(os.Stderr, "tunbench: ip netns del %s: %v: %s", ns, err, out)
		}
	}
}

// inClient returns the arguments that run argv in the client namespace.
func (t *topology) inClient(argv ...string) []string {
	return append([]string{"netns", "exec", t.client}, argv...)
}

// inServer returns the arguments that run argv in the server namespace.
func (t *topology) inServer(argv ...string) []string {
	return append([]string{"netns", "exec", t.server}, argv...)
}

// clientOutput runs argv in the client namespace and returns its output.
func (t *topology) clientOutput(argv ...string) (string, error) {
	out, err := exec.Command("ip", t.inClient(argv...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s in %s: %w: %s", strings.Join(argv, " "), t.client, err, out)
	}
	return string(out), nil
}

func ip(args ...string) error {
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
