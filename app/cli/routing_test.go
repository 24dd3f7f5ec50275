package cli

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/api"
	"github.com/skiffvpn/skiff/core/plan"
)

// TestRoutingCommand runs `skiff routing` against the API on a Unix
// socket: saved while disconnected, live while connected, refused when
// it is no routing.
func TestRoutingCommand(t *testing.T) {
	ctrl := core.NewController(core.Options{LogOutput: io.Discard})
	l, sock := serveAPI(t, ctrl)
	skiff := func(args ...string) (int, string) {
		var out bytes.Buffer
		code := Main(append([]string{"routing", "--socket", sock}, args...), strings.NewReader(""), &out, &out)
		return code, out.String()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := l.Import(ctx, api.ImportRequest{Body: "hysteria2://secret@127.0.0.1:9/?insecure=1#Hy2"}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args    []string
		connect bool // connect before this step
		code    int
		out     string
	}{
		{nil, false, 0, "rule\n"},
		{[]string{"global"}, false, 0, "saved for the next connection"},
		{nil, false, 0, "global\n"},
		{[]string{"everything"}, false, 2, "want rule, global or direct"},
		{[]string{""}, false, 2, "want rule, global or direct"},
		{[]string{"rule", "global"}, false, 2, "usage: skiff routing"},
		{[]string{"direct"}, true, 0, "new connections follow it now"},
		{nil, false, 0, "direct\n"},
	} {
		if tt.connect {
			if _, err := l.Connect(ctx, plan.Request{Listen: "127.0.0.1:0"}); err != nil {
				t.Fatal(err)
			}
			defer l.Disconnect(ctx)
		}
		if code, out := skiff(tt.args...); code != tt.code || !strings.Contains(out, tt.out) {
			t.Errorf("skiff routing %q: exit %d %q, want %d %q", tt.args, code, out, tt.code, tt.out)
		}
	}
	if st := ctrl.Status(); st.Routing != core.RoutingDirect {
		t.Errorf("the core routes %q, want direct", st.Routing)
	}
}
