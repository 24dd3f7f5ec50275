package cli

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/api"
	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/internal/nettest"
)

// TestConnectionsCommand runs `skiff connections` against the API on a
// Unix socket while this test holds a connection through the local proxy:
// its row names this test's program.
func TestConnectionsCommand(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("programs are found by the Linux look-up here")
	}
	ctrl := core.NewController(core.Options{LogOutput: io.Discard})
	_, sock := serveAPI(t, ctrl)
	if err := ctrl.Start(context.Background(), core.Config{Final: core.TargetDirect, Listen: "127.0.0.1:0"}); err != nil {
		t.Fatal(err)
	}
	defer ctrl.Stop()

	// A flow through the local proxy to an echo server, held open.
	echo := nettest.TCPEcho(t)
	nettest.SOCKSConnect(t, ctrl.Status().Listen, echo)

	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	nettest.Eventually(t, "skiff connections lists the flow", func() (bool, string) {
		out.Reset()
		if code := Main([]string{"connections", "--socket", sock}, strings.NewReader(""), &out, &out); code != 0 {
			t.Fatalf("skiff connections: exit %d: %s", code, out.String())
		}
		return strings.Contains(out.String(), echo.String()), out.String()
	})
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "PROGRAM") {
		t.Fatalf("skiff connections printed:\n%s", out.String())
	}
	if f := strings.Fields(lines[1]); len(f) < 4 || f[2] != filepath.Base(self) || f[3] != echo.String() {
		t.Fatalf("row %q, want this program %q and the destination %s", lines[1], filepath.Base(self), echo)
	}
}

// serveAPI serves the API of a Local over ctrl and a new profile store on
// a Unix socket until the test ends, and returns the Local and the
// socket's path.
func serveAPI(t *testing.T, ctrl *core.Controller) (*api.Local, string) {
	t.Helper()
	store, err := profile.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	l := api.NewLocal(ctrl, store, nil)
	t.Cleanup(func() { l.Close() })
	sock := filepath.Join(t.TempDir(), "api.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: api.NewHandler(l, api.HandlerOptions{})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return l, sock
}
