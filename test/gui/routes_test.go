package gui

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/link"
	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/test/harness"
)

// writeRulesProfile writes a config dir whose route is the group Home
// (s, then a server that is down) and whose rules send flows for
// localhost to the group Streaming (another node of s, then one that is
// down), .lan direct, and one rule to a group that was removed; the rest
// goes through Home.
func writeRulesProfile(t *testing.T, s *harness.Server, listen, probeURL string) string {
	t.Helper()
	dir := t.TempDir()
	store, err := profile.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	err = store.Update(func(p *profile.Profile) error {
		sub := &profile.Subscription{ID: "s1", URL: "https://provider.example/sub", Title: "Provider"}
		p.Subscriptions = append(p.Subscriptions, sub)
		add := func(uri, name, subID string) string {
			n, err := link.Parse(uri)
			if err != nil {
				t.Fatal(err)
			}
			n.Name = name
			id := profile.NodeID(subID, n)
			p.Nodes = append(p.Nodes, &profile.Node{ID: id, Subscription: subID, Config: *n})
			return id
		}
		home := &profile.Group{ID: "g1", Name: "Home", Type: profile.GroupFailover, Members: []string{
			add(s.Link(s.Trusting()), "Home server", ""),
			add("hysteria2://nobody@127.0.0.1:9/?insecure=1", "Backup (down)", ""),
		}}
		streaming := &profile.Group{ID: "g2", Name: "Streaming", Type: profile.GroupFailover, Subscription: sub.ID, Origin: profile.OriginProvider, Members: []string{
			add(s.Link(s.Trusting()), "Tokyo 01", sub.ID),
			add("hysteria2://nobody@127.0.0.1:19/?insecure=1", "Osaka 02 (down)", sub.ID),
		}}
		p.Groups = append(p.Groups, home, streaming)
		p.Selected = home.ID
		p.Routes.Rules = []profile.Rule{
			{Type: "domain_suffix", Values: []string{"video.example", "tv.example"}, Target: streaming.ID},
			{Type: "ip_cidr", Values: []string{"127.0.0.1/32"}, Target: streaming.ID}, // the test's origin
			{Type: "domain_suffix", Values: []string{"old.example"}, Target: "g-removed"},
			{Type: "domain_suffix", Values: []string{"lan"}, Target: "direct"},
		}
		p.Settings.ProbeURL = probeURL
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	writePrefs(t, dir, listen)
	return dir
}

// TestRuleTargetsUnderXvfb photographs Routes with rules that send flows
// to a group of their own: the rows with the target group's live member
// and health, the group list marking it, its members' health, a rule
// whose target is gone, and the editor's list of targets, in English and
// Chinese.
func TestRuleTargetsUnderXvfb(t *testing.T) {
	paths := needTools(t)
	harness.NeedWindow(t)
	bin := harness.NeedSkiff(t)
	srv := hy2Server(t)
	origin := bigOrigin(t)
	second := originAt(t, "127.0.0.2:0")
	// English and Chinese at the larger size, English at the small one
	// too; chooser is where the button that lists the editor's targets is.
	for _, tc := range []struct {
		lang    int // in languages
		w, h    int
		chooser [2]int
	}{
		{0, 1024, 768, [2]int{996, 469}},
		{1, 1024, 768, [2]int{996, 469}},
		{0, 800, 600, [2]int{771, 389}},
	} {
		lang, w, h := languages[tc.lang], tc.w, tc.h
		name := fmt.Sprintf("%s-%dx%d", lang.code, w, h)
		t.Run(name, func(t *testing.T) {
			display := startXvfb(t, paths["Xvfb"], w, h)
			port, err := harness.FreePort()
			if err != nil {
				t.Fatal(err)
			}
			listen := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
			dir := writeRulesProfile(t, srv, listen, "http://"+origin+"/generate_204")
			windowEnv(t, display, dir, "light", lang.lang)
			gui := harness.Start(t, "skiff-gui", bin)
			id := findWindow(t, display)
			fitWindow(t, display, id, w, h)
			clickConnect(t, display, id, listen)
			// A flow for the rule's group puts it in use: it checks its
			// members from then on.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			c, err := harness.DialSOCKS(ctx, listen, origin)
			cancel()
			if err != nil {
				t.Fatalf("a flow for the Streaming rule: %v", err)
			}
			c.SetDeadline(time.Now().Add(10 * time.Second))
			fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", origin)
			if n, _ := io.Copy(io.Discard, c); n < 1<<20 {
				t.Errorf("the Streaming rule's flow fetched %d bytes, want at least 1 MiB", n)
			}
			c.Close()
			// And one through the route, to an origin on 127.0.0.2.
			if n := fetchThrough(t, listen, second); n < 1<<20 {
				t.Errorf("the route's flow fetched %d bytes, want at least 1 MiB", n)
			}
			time.Sleep(4 * time.Second) // the members' first checks
			for i := 0; i < 2; i++ {
				click(t, display, id, lang.tabX[2], 21)
				time.Sleep(700 * time.Millisecond)
			}
			screenshot(t, display, "gui-"+name+"-routes-targets")
			click(t, display, id, 100, 140) // the Streaming group: its members' live health
			time.Sleep(1500 * time.Millisecond)
			screenshot(t, display, "gui-"+name+"-routes-target-group")
			click(t, display, id, tc.chooser[0], tc.chooser[1]) // the editor's target chooser
			time.Sleep(1 * time.Second)
			screenshot(t, display, "gui-"+name+"-routes-target-choices")
			xdo(t, display, "key", "Escape")
			time.Sleep(500 * time.Millisecond)
			// Typing narrows the list.
			click(t, display, id, tc.chooser[0]-100, tc.chooser[1])
			xdo(t, display, "key", "ctrl+a")
			xdo(t, display, "type", "--delay", "50", "tok")
			click(t, display, id, tc.chooser[0], tc.chooser[1])
			time.Sleep(1 * time.Second)
			screenshot(t, display, "gui-"+name+"-routes-target-typed")
			xdo(t, display, "key", "Escape")
			select {
			case <-gui.Done():
				t.Fatalf("skiff exited: %s\n%s", gui.ExitStatus(), gui.Output())
			default:
			}
		})
	}
}

// originAt serves 4 MiB at addr and returns its address.
func originAt(t *testing.T, addr string) string {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	body := make([]byte, 4<<20)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) })}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String()
}
