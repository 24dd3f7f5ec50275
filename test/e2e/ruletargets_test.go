package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/test/harness"
)

// TestRuleTargetsGroupAndNode: a provider's rules that name one of its
// groups, or one of its servers, send those flows there, not to the route
// the user picked. Two sing-box Trojan servers leave from different
// loopback addresses (127.0.0.2 and 127.0.0.3, their direct outbounds'
// bind addresses), and the origins report the address each connection
// came from: the route "Main" runs on server a, the rule for the group
// "🇭🇰 Hong Kong" (a selector over a and b, on its default b) and the rule for
// server b leave through b.
func TestRuleTargetsGroupAndNode(t *testing.T) {
	dir := t.TempDir()
	a := newServer(t, setup{kind: harness.TrojanTLS})
	b := newServer(t, setup{kind: harness.TrojanTLS})
	for _, s := range []struct {
		srv  *harness.Server
		bind string
	}{{a, "127.0.0.2"}, {b, "127.0.0.3"}} {
		raw, err := s.srv.ServerConfig()
		if err != nil {
			t.Fatal(err)
		}
		var cfg map[string]any
		if err := json.Unmarshal(raw, &cfg); err != nil {
			t.Fatal(err)
		}
		cfg["outbounds"].([]any)[0].(map[string]any)["inet4_bind_address"] = s.bind
		raw, _ = json.Marshal(cfg)
		harness.SingBox(t, "sing-box-"+s.bind, raw)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = harness.WaitTCP(ctx, s.srv.Addr())
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}

	// Three origins that answer with the address the connection came from.
	origin := func() int {
		srv, err := harness.ServeTCP(func(c net.Conn) {
			host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
			io.WriteString(c, host+"\n")
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Close() })
		_, port, _ := net.SplitHostPort(srv.Addr())
		p, _ := strconv.Atoi(port)
		return p
	}
	plain, byGroup, byNode := origin(), origin(), origin()

	out := func(s *harness.Server, tag string) map[string]any {
		o := s.ClientOutbound()
		o["tag"] = tag
		tls := o["tls"].(map[string]any)
		delete(tls, "certificate_path")
		tls["insecure"] = true
		return o
	}
	sub := map[string]any{
		"outbounds": []any{
			out(a, "a"), out(b, "b"),
			map[string]any{"type": "selector", "tag": "Main", "outbounds": []string{"a", "b"}},
			map[string]any{"type": "selector", "tag": "🇭🇰 Hong Kong", "outbounds": []string{"a", "b"}, "default": "b"},
			map[string]any{"type": "direct", "tag": "direct"},
		},
		"route": map[string]any{
			"rules": []any{
				map[string]any{"port": []int{byGroup}, "outbound": "🇭🇰 Hong Kong"},
				map[string]any{"port": []int{byNode}, "outbound": "b"},
			},
			"final": "Main",
		},
	}
	raw, _ := json.Marshal(sub)
	subFile := filepath.Join(dir, "sub.json")
	if err := os.WriteFile(subFile, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	bin := harness.NeedSkiff(t)
	confDir := filepath.Join(dir, "profile")
	if b, err := exec.Command(bin, "import", "--config-dir", confDir, subFile).CombinedOutput(); err != nil {
		t.Fatalf("skiff import: %v: %s", err, b)
	}
	port, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	listen := "127.0.0.1:" + strconv.Itoa(port)
	sk := harness.Start(t, "skiff", bin, "run", "--node", "Main", "--config-dir", confDir, "--listen", listen)
	t.Cleanup(func() {
		sk.Stop()
		checkNoSecrets(t, sk.Output(), a)
		checkNoSecrets(t, sk.Output(), b)
	})
	waitText(t, sk, "skiff: listening on")

	from := func(port int) string {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		c, err := harness.DialSOCKS(ctx, listen, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			t.Fatalf("port %d: %v\n%s", port, err, sk.Output())
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			t.Fatalf("port %d: read: %v", port, err)
		}
		return strings.TrimSpace(line)
	}
	for _, tc := range []struct {
		what string
		port int
		want string
	}{
		{"no rule: the route Main, on a", plain, "127.0.0.2"},
		{"the rule for the group Hong Kong, on b", byGroup, "127.0.0.3"},
		{"the rule for server b", byNode, "127.0.0.3"},
	} {
		if got := from(tc.port); got != tc.want {
			t.Errorf("%s: the origin saw %q, want %s", tc.what, got, tc.want)
		}
	}
}
