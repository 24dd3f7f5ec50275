package cli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/api"
	"github.com/skiffvpn/skiff/core/plan"
	"github.com/skiffvpn/skiff/core/profile"
)

// TestRulesCommand runs `skiff rules` and `skiff rules refresh` against
// the API served on a Unix socket, with a core that runs one downloaded
// rule set.
func TestRulesCommand(t *testing.T) {
	l, sock := serveAPI(t, core.NewController(core.Options{LogOutput: io.Discard}))
	skiff := func(args ...string) (int, string) {
		var out bytes.Buffer
		code := Main(append([]string{"rules", "--socket", sock}, args...), strings.NewReader(""), &out, &out)
		return code, out.String()
	}

	if code, out := skiff("refresh"); code != 1 || !strings.Contains(out, "no such rule set") {
		t.Errorf("refresh while disconnected: exit %d %q", code, out)
	}
	if code, out := skiff("bogus"); code != 2 {
		t.Errorf("unknown subcommand: exit %d %q", code, out)
	}

	var mu sync.Mutex
	status := 200
	lists := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.WriteHeader(status)
		io.WriteString(w, "+.a.example\n+.b.example\n")
	}))
	defer lists.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := l.Import(ctx, api.ImportRequest{Body: "hysteria2://secret@127.0.0.1:9/?insecure=1#Hy2"}); err != nil {
		t.Fatal(err)
	}
	if err := api.Update(ctx, l, func(p *profile.Profile) error {
		p.Routes.RuleSets = []profile.RuleSet{{Name: "mine", URL: lists.URL + "/l.txt", Format: "clash-domain"}}
		p.Routes.Rules = []profile.Rule{{Type: "rule_set", Values: []string{"mine"}, Target: "direct"}}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Connect(ctx, plan.Request{Listen: "127.0.0.1:0"}); err != nil {
		t.Fatal(err)
	}
	defer l.Disconnect(ctx)

	if code, out := skiff(); code != 0 || !strings.Contains(out, "mine") || !strings.Contains(out, "DOMAINS") {
		t.Errorf("skiff rules: exit %d %q", code, out)
	}
	if code, out := skiff("refresh", "mine"); code != 0 || !strings.Contains(out, "download") {
		t.Errorf("skiff rules refresh mine: exit %d %q", code, out)
	}
	mu.Lock()
	status = 503
	mu.Unlock()
	if code, out := skiff("refresh"); code != 1 || !strings.Contains(out, "503") {
		t.Errorf("refresh of a failing list: exit %d %q, want 1 and the error", code, out)
	}
	if code, out := skiff("--json"); code != 0 || !strings.Contains(out, `"name":"mine"`) {
		t.Errorf("skiff rules --json: exit %d %q", code, out)
	}
}
