package harness

import (
	"context"
	"net"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// listeningRE matches the line skiff run prints once its proxy listens.
var listeningRE = regexp.MustCompile(`skiff: listening on (\S+)`)

// SkiffRunArgs returns the arguments of `skiff run` for links with the
// local proxy on listen, followed by extra.
func SkiffRunArgs(listen string, links []string, extra ...string) []string {
	args := []string{"run"}
	for _, l := range links {
		args = append(args, "--link", l)
	}
	args = append(args, "--listen", listen)
	return append(args, extra...)
}

// StartSkiffRun starts `skiff run` with links and its proxy on a free
// loopback port and waits until it listens. It returns the process and the
// proxy address. The caller owns the process.
func StartSkiffRun(ctx context.Context, bin string, links []string, extra ...string) (*Process, string, error) {
	port, err := FreePort()
	if err != nil {
		return nil, "", err
	}
	listen := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	p, err := StartProcess("skiff", bin, SkiffRunArgs(listen, links, extra...)...)
	if err != nil {
		return nil, "", err
	}
	m, err := p.WaitOutput(ctx, listeningRE)
	if err != nil {
		p.Stop()
		return nil, "", err
	}
	return p, m[1], nil
}

// SkiffRun starts `skiff run` for t with links and extra flags, waits
// until its proxy listens, and returns the process and the proxy address
// ("127.0.0.1:port", SOCKS5 and HTTP on the same port). It stops skiff in
// t.Cleanup. When skiff does not come up the error carries its output and
// the process is returned with it (it has exited or will be stopped).
func SkiffRun(t testing.TB, links []string, extra ...string) (*Process, string, error) {
	t.Helper()
	bin := NeedSkiff(t)
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	listen := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	p := Start(t, "skiff", bin, SkiffRunArgs(listen, links, extra...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	m, err := p.WaitOutput(ctx, listeningRE)
	if err != nil {
		return p, "", err
	}
	return p, m[1], nil
}
