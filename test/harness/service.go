package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/skiffvpn/skiff/core/api"
)

// SkiffService is a `skiff service` started for a benchmark or a test, as
// root, with its socket and its profile in a directory of its own: the
// service's --socket and --state-dir flags, which only whoever starts it
// gives (a client never names a path). It is driven through that socket
// by the skiff command line, as users drive it.
type SkiffService struct {
	*Process
	Bin    string // the skiff binary, also the client
	Socket string
}

// ServiceStatus is what `skiff status --json` says of the connection.
type ServiceStatus struct {
	State  string `json:"state"`
	TUN    string `json:"tun"`
	Listen string `json:"listen"`
}

// StartSkiffService starts `bin service` with its files under dir (created)
// and waits until it listens. wrap, when given, is the command that runs
// it (such as `ip netns exec NS sh -c '…; exec "$0" "$@"'`), followed by
// the service's own argv.
func StartSkiffService(ctx context.Context, name, bin, dir string, wrap ...string) (*SkiffService, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	s := &SkiffService{Bin: bin, Socket: filepath.Join(dir, "skiff.sock")}
	argv := append(wrap, bin, "service", "--socket", s.Socket, "--state-dir", filepath.Join(dir, "lib"), "--group", "root")
	p, err := StartProcess(name, argv[0], argv[1:]...)
	if err != nil {
		return nil, err
	}
	s.Process = p
	if err := p.WaitText(ctx, "service: listening"); err != nil {
		p.Stop()
		return nil, err
	}
	return s, nil
}

// Ctl runs `skiff CMD --socket SOCKET ARGS…` and returns its standard
// output.
func (s *SkiffService) Ctl(ctx context.Context, cmd string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	argv := append([]string{cmd, "--socket", s.Socket}, args...)
	out, err := exec.CommandContext(ctx, s.Bin, argv...).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return nil, fmt.Errorf("skiff %s: %w: %s", cmd, err, strings.TrimSpace(string(ee.Stderr)))
		}
		return nil, fmt.Errorf("skiff %s: %w", cmd, err)
	}
	return out, nil
}

// Status is `skiff status --json`.
func (s *SkiffService) Status(ctx context.Context) (ServiceStatus, error) {
	var st ServiceStatus
	out, err := s.Ctl(ctx, "status", "--json")
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(out, &st); err != nil {
		return st, fmt.Errorf("skiff status --json: %w: %s", err, out)
	}
	return st, nil
}

// Runtime reads the service's Go heap (HeapAlloc) and goroutine count
// through its API, as the window reads its memory: a measure.Runtime.
func (s *SkiffService) Runtime() (uint64, int, error) { return ServiceRuntime(s.Socket) }

// ServiceRuntime is SkiffService.Runtime for the service at socket.
func ServiceRuntime(socket string) (uint64, int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := api.NewClient(func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	})
	defer c.Close()
	snap, err := c.Stats(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("service stats: %w", err)
	}
	return snap.Memory.Heap, int(snap.Memory.Goroutines), nil
}

// Connect imports link (`skiff import`), connects (`skiff connect
// ARGS…`, e.g. --tun or --listen ADDR) and waits until the status says
// running — with a TUN device when args has --tun.
func (s *SkiffService) Connect(ctx context.Context, link string, args ...string) (ServiceStatus, error) {
	if _, err := s.Ctl(ctx, "import", link); err != nil {
		return ServiceStatus{}, err
	}
	if _, err := s.Ctl(ctx, "connect", args...); err != nil {
		return ServiceStatus{}, err
	}
	tun := false
	for _, a := range args {
		tun = tun || a == "--tun"
	}
	for {
		st, err := s.Status(ctx)
		if err != nil {
			return st, err
		}
		if st.State == "running" && (!tun || st.TUN != "") {
			return st, nil
		}
		select {
		case <-ctx.Done():
			return st, fmt.Errorf("harness: the service did not connect: %+v: %w", st, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
