package harness

import (
	"context"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"
)

// listeningRE matches the line skiff run prints once its proxy listens.
var listeningRE = regexp.MustCompile(`skiff: listening on (\S+)`)

// SkiffRunArgs returns the arguments of `skiff run` for links with the
// local proxy on listen, followed by extra.
//
// A failover group's health probes and speed probes go to a server of the
// test's on loopback (LocalProbeURL), not to the product's default public
// URLs: the tests send no traffic off this machine. extra comes last, so a
// test that serves its own probes (in a namespace) overrides these.
func SkiffRunArgs(listen string, links []string, extra ...string) []string {
	args := []string{"run"}
	for _, l := range links {
		args = append(args, "--link", l)
	}
	probe := LocalProbeURL()
	args = append(args, "--listen", listen, "--probe-url", probe+"/generate_204", "--speed-url", probe+"/__down?bytes=1048576")
	return append(args, extra...)
}

// LocalProbeURL returns the base URL of an HTTP server on loopback, started
// once per test process, that answers /generate_204 with 204 and
// /__down?bytes=N with N bytes (at most 8 MiB): the health and speed probes
// of the groups the tests run.
func LocalProbeURL() string { return probeOnce() }

var probeOnce = sync.OnceValue(func() string {
	mux := http.NewServeMux()
	mux.HandleFunc("/generate_204", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("/__down", func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(r.URL.Query().Get("bytes"))
		if err != nil || n < 0 || n > 8<<20 {
			http.Error(w, "bytes: 0 to 8 MiB", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(n))
		buf := make([]byte, 32<<10)
		for n > 0 {
			k := min(n, len(buf))
			if _, err := w.Write(buf[:k]); err != nil {
				return
			}
			n -= k
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "http://127.0.0.1:9" // nothing listens there: probes fail, as they would off-line
	}
	go http.Serve(ln, mux) // lives as long as the test process
	return "http://" + ln.Addr().String()
})

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
