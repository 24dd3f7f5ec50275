package window

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/api"
	"github.com/skiffvpn/skiff/core/group"
	"github.com/skiffvpn/skiff/core/link"
	nodepkg "github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/plan"
	"github.com/skiffvpn/skiff/core/preset"
	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/core/ruleset"
	"github.com/skiffvpn/skiff/core/stats"
	"github.com/skiffvpn/skiff/core/subscription"
	"github.com/skiffvpn/skiff/internal/nettest"
)

// Links used by the tests. Nothing listens on port 9 of the loopback; the
// core only dials a server when a flow needs it.
const (
	hy2Link   = "hysteria2://secret@127.0.0.1:9/?insecure=1#Hy2 Home"
	vlessLink = "vless://b831381d-6324-4d53-ad4f-8cda48b30811@127.0.0.1:443?type=ws&security=tls&path=%2Fws#VLESS Home"
	// alterId 64: legacy VMess, which Skiff greys.
	vmessLink = "vmess://eyJ2IjoiMiIsInBzIjoiVk1lc3MgSG9tZSIsImFkZCI6IjEyNy4wLjAuMSIsInBvcnQiOiI0NDMiLCJpZCI6ImI4MzEzODFkLTYzMjQtNGQ1My1hZDRmLThjZGE0OGIzMDgxMSIsImFpZCI6IjY0IiwibmV0IjoidGNwIn0="
)

// harness is a UI on Fyne's test driver whose UI-thread work is queued
// and run by the test goroutine, so the test reads widgets without races.
type harness struct {
	t     *testing.T
	ui    *UI
	ctrl  *core.Controller
	store *profile.Store
	mu    sync.Mutex
	queue []func()
}

// newHarness builds a UI over a fresh profile that setup may fill.
func newHarness(t *testing.T, prefs Prefs, setup func(p *profile.Profile)) *harness {
	t.Helper()
	return newHarnessWith(t, prefs, setup, nil)
}

// newHarnessWith is newHarness whose backend wrap may wrap.
func newHarnessWith(t *testing.T, prefs Prefs, setup func(p *profile.Profile), wrap func(api.Backend) api.Backend) *harness {
	t.Helper()
	dir := t.TempDir()
	store, err := profile.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		if err := store.Update(func(p *profile.Profile) error { setup(p); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if prefs.Language == "" {
		prefs.Language = "en" // the tests read English words, whatever the machine's locale
	}
	if err := savePrefs(dir, prefs); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, store: store, ctrl: core.NewController(core.Options{LogOutput: io.Discard})}
	a := test.NewTempApp(t)
	var b api.Backend = api.NewLocal(h.ctrl, store, nil)
	if wrap != nil {
		b = wrap(b)
	}
	h.ui, err = newUI(a, Options{Backend: b, PrefsDir: dir}, func(f func()) {
		h.mu.Lock()
		h.queue = append(h.queue, f)
		h.mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	w := h.ui.Window()
	w.Resize(fyne.NewSize(1024, 768))
	h.ui.clip = fakeClipboard{} // no test reads the machine's clipboard by chance
	t.Cleanup(h.ui.Close)
	return h
}

// pump runs the queued UI work.
func (h *harness) pump() {
	h.mu.Lock()
	q := h.queue
	h.queue = nil
	h.mu.Unlock()
	for _, f := range q {
		f()
	}
}

// waitFor pumps the UI queue until cond holds, or fails after 10 s.
func (h *harness) waitFor(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		h.pump()
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func addLinks(t *testing.T, links ...string) func(p *profile.Profile) {
	return func(p *profile.Profile) {
		for _, l := range links {
			n, err := link.Parse(l)
			if err != nil {
				t.Fatalf("parse %q: %v", l, err)
			}
			subscription.AddNodes(p, []*nodepkg.Node{n})
		}
	}
}

// socksHandshake checks that addr speaks SOCKS5 (no-auth greeting).
func socksHandshake(t *testing.T, addr string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatalf("dial the local proxy: %v", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte{5, 1, 0}); err != nil {
		t.Fatal(err)
	}
	var b [2]byte
	if _, err := io.ReadFull(bufio.NewReader(c), b[:]); err != nil {
		t.Fatalf("SOCKS5 greeting: %v", err)
	}
	if b != [2]byte{5, 0} {
		t.Fatalf("SOCKS5 greeting answer %v, want [5 0]", b)
	}
}

func TestSwitchStartsAndStopsTheCore(t *testing.T) {
	h := newHarness(t, Prefs{Listen: "127.0.0.1:0"}, addLinks(t, hy2Link))
	home := h.ui.home
	if home.toggle.Text != "Connect" {
		t.Fatalf("switch says %q before connecting", home.toggle.Text)
	}
	test.Tap(home.toggle)
	h.waitFor("the core to run", func() bool { return home.toggle.Text == "Disconnect" })
	st := h.ctrl.Status()
	if st.State != core.Running {
		t.Fatalf("core state %v, want running", st.State)
	}
	socksHandshake(t, st.Listen)
	if !strings.Contains(home.listen.Text, st.Listen) {
		t.Errorf("Home does not show the proxy address %s: %q", st.Listen, home.listen.Text)
	}
	// Nothing serves Hy2 Home's address: the run's probe fails, and Home
	// says so instead of Connected.
	h.waitFor("Home to say no server answers", func() bool { return home.state.Text == "No server reachable" })
	if !strings.Contains(home.reason.Text, "Hy2 Home") {
		t.Errorf("Home does not say which server failed: %q", home.reason.Text)
	}
	if e := home.Error(); e != "" {
		t.Errorf("Home shows an error while connected: %q", e)
	}

	// The graph is fed from the core's one-second sampler.
	h.waitFor("the graph to get samples", func() bool { return home.graph.Samples() >= 1 })

	test.Tap(home.toggle)
	h.waitFor("the core to stop", func() bool { return home.toggle.Text == "Connect" })
	if s := h.ctrl.Status().State; s != core.Stopped {
		t.Fatalf("core state %v after disconnect, want stopped", s)
	}
	if _, err := net.DialTimeout("tcp", st.Listen, time.Second); err == nil {
		t.Errorf("the local proxy %s still accepts after disconnect", st.Listen)
	}
}

func TestCoreErrorAppearsOnHome(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	h := newHarness(t, Prefs{Listen: busy.Addr().String()}, addLinks(t, hy2Link))
	home := h.ui.home
	test.Tap(home.toggle)
	h.waitFor("the core to fail", func() bool { return h.ctrl.Status().State == core.Failed && home.Error() != "" })
	if e := home.Error(); !strings.Contains(e, "Another program already uses the local proxy port") {
		t.Errorf("Home error %q does not say what to do", e)
	}
	if home.toggle.Text != "Connect" || home.toggle.Disabled() {
		t.Errorf("switch is %q (disabled %v) after a failed start; want an enabled Connect", home.toggle.Text, home.toggle.Disabled())
	}
	// Plain words on Home; the core's Go error chain behind Details.
	raw := h.ctrl.Status().Err
	if raw == "" {
		t.Fatal("the core gave no error")
	}
	if e := home.Error(); strings.Contains(e, raw) || strings.Contains(e, "bind") {
		t.Errorf("Home shows the raw error: %q", e)
	}
	if !home.errMore.Visible() {
		t.Fatal("no Details button")
	}
	test.Tap(home.errMore)
	if got := overlayTexts(h.ui.win); !strings.Contains(got, raw) {
		t.Errorf("Details shows %q, want the core's %q", got, raw)
	}
}

func TestNoServerErrorAppearsOnHome(t *testing.T) {
	h := newHarness(t, Prefs{Listen: "127.0.0.1:0"}, nil)
	test.Tap(h.ui.home.toggle)
	h.waitFor("the error", func() bool { return h.ui.home.Error() != "" })
	if e := h.ui.home.Error(); !strings.Contains(e, "Add a subscription") {
		t.Errorf("Home error %q does not tell the user to add a server", e)
	}
	if s := h.ctrl.Status().State; s != core.Stopped {
		t.Errorf("core state %v, want stopped", s)
	}
}

func TestSubscriptionAddedThroughTheView(t *testing.T) {
	body := hy2Link + "\n" + vlessLink + "\n" + vmessLink + "\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Subscription-Userinfo", "upload=1024; download=2048; total=10737418240; expire=4102444800")
		io.WriteString(w, body)
	}))
	defer srv.Close()

	h := newHarness(t, Prefs{}, nil)
	v := h.ui.profiles
	test.Type(v.url, srv.URL+"/sub?token=abc")
	v.addFromEntry()
	h.waitFor("the nodes to appear", func() bool { return len(v.Shown()) == 3 })
	got := strings.Join(v.Shown(), ",")
	for _, want := range []string{"Hy2 Home", "VLESS Home", "VMess Home"} {
		if !strings.Contains(got, want) {
			t.Errorf("node list %q lacks %q", got, want)
		}
	}
	if len(v.p.Subscriptions) != 1 {
		t.Fatalf("%d subscriptions, want 1", len(v.p.Subscriptions))
	}
	_, detail, bad := v.describeSource(v.p.Subscriptions[0].ID)
	if bad || !strings.Contains(detail, "left of 10.0 GiB") || !strings.Contains(detail, "expires Jan 1, 2100") {
		t.Errorf("subscription detail %q (bad %v) lacks traffic or expiry", detail, bad)
	}
	if strings.Contains(detail, "token") {
		t.Errorf("subscription detail shows the URL's token: %q", detail)
	}
	// The VMess node is greyed with the reason.
	for _, n := range v.p.Nodes {
		if n.Name() == "VMess Home" && n.Unsupported == "" {
			t.Errorf("VMess node is not marked unsupported")
		}
	}
	// Search narrows the list.
	test.Type(v.search, "vless")
	if s := v.Shown(); len(s) != 1 || s[0] != "VLESS Home" {
		t.Errorf("search for vless shows %q", s)
	}

	// A failing refresh shows its error on the subscription and on Home.
	srv.Close()
	v.refreshSubs(nil)
	h.waitFor("the refresh error", func() bool {
		_, _, bad := v.describeSource(v.p.Subscriptions[0].ID)
		return bad
	})
	if !strings.Contains(h.ui.home.subNote.Text, "failed to refresh") || !h.ui.home.subNote.Visible() {
		t.Errorf("Home does not show the failed subscription: %q", h.ui.home.subNote.Text)
	}
	if len(v.p.Nodes) != 3 {
		t.Errorf("a failed refresh left %d nodes, want the 3 of before", len(v.p.Nodes))
	}
}

func TestLogsViewShowsCoreLogs(t *testing.T) {
	h := newHarness(t, Prefs{Listen: "127.0.0.1:0"}, addLinks(t, hy2Link))
	h.ctrl.Logger().Warn("test: something to see")
	h.waitFor("the log line", func() bool { return strings.Contains(h.ui.logs.Text(), "something to see") })
	h.ui.fa.Clipboard().SetContent("")
	test.Tap(h.ui.logs.copyBtn)
	if got := h.ui.fa.Clipboard().Content(); !strings.Contains(got, "something to see") {
		t.Errorf("Copy put %q on the clipboard", got)
	}
	h.ui.logs.level.SetSelectedIndex(3)
	if strings.Contains(h.ui.logs.Text(), "something to see") {
		t.Errorf("level filter Error still shows a warning")
	}
}

func TestPrefsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	p := Prefs{Mode: plan.ModeProxy, Listen: "127.0.0.1:1081", StartConnected: true, Theme: ThemeDark}
	if err := savePrefs(dir, p); err != nil {
		t.Fatal(err)
	}
	got, err := loadPrefs(dir)
	if err != nil || got != p {
		t.Fatalf("loadPrefs = %+v, %v; want %+v", got, err, p)
	}
	if _, err := loadPrefs(filepath.Join(dir, "missing")); err != nil {
		t.Errorf("missing prefs: %v", err)
	}
}

func TestRoutesShowTheRunningGroup(t *testing.T) {
	const hy2Second = "hysteria2://secret@127.0.0.1:7/?insecure=1#Hy2 Second"
	h := newHarness(t, Prefs{Listen: "127.0.0.1:0"}, func(p *profile.Profile) {
		addLinks(t, hy2Link, hy2Second)(p)
		g := &profile.Group{ID: "g1", Name: "Home", Type: profile.GroupFailover}
		for _, n := range p.Nodes {
			g.Members = append(g.Members, n.ID)
		}
		p.Groups = []*profile.Group{g}
		p.Selected = g.ID
	})
	test.Tap(h.ui.home.toggle)
	h.waitFor("the core to run", func() bool { return h.ui.home.toggle.Text == "Disconnect" })
	h.ui.tabs.SelectIndex(2)
	v := h.ui.routes
	h.waitFor("live member state", func() bool { return len(v.live) == 2 })
	if got := v.healthOf("Hy2 Home", false); got == "not in use" {
		t.Errorf("Hy2 Home health %q: the live state is not shown", got)
	}

	// A flow through the proxy finds the first server dead: the group
	// switches, and Home and the switch log say so.
	c, err := net.DialTimeout("tcp", h.ctrl.Status().Listen, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte{5, 1, 0, 5, 1, 0, 1, 127, 0, 0, 1, 0, 80})
	h.waitFor("a switch event", func() bool { return len(h.ui.Switches()) > 0 && len(v.switches) > 0 })
	sw := h.ui.Switches()[0]
	if sw.From != "Hy2 Home" {
		t.Errorf("switch from %q, want Hy2 Home", sw.From)
	}
	// The reason crosses typed: the row says it in the window's words, the
	// core's English chain only in the details.
	// (The member whose failure moved the group: the first, or the second
	// when the first had failed already.)
	if sw.Why.Kind != group.WhyFailed || sw.Why.Member != "Hy2 Home" && sw.Why.Member != "Hy2 Second" || sw.Why.Fault == "" {
		t.Errorf("switch's Why = %+v, want a member's failure", sw.Why)
	}
	if words := switchWhy(sw.Why, sw.Reason); words == sw.Reason || !strings.Contains(words, sw.Why.Member) {
		t.Errorf("switch said as %q, core's text %q", words, sw.Reason)
	}
	h.waitFor("Hy2 Home's failure in the member list, in words", func() bool {
		for _, m := range v.live {
			if m.Name == "Hy2 Home" && m.Fault != "" {
				return strings.Contains(v.healthOf(m.Name, false), faultWords(m.Fault, ""))
			}
		}
		return false
	})
	for _, m := range v.live {
		if m.Name != "Hy2 Home" {
			continue
		}
		if row, whole := v.healthOf(m.Name, false), v.healthOf(m.Name, true); m.LastError == "" || strings.Contains(row, m.LastError) || !strings.Contains(whole, m.LastError) {
			t.Errorf("member row %q / details %q: want the error chain %q only in the details", row, whole, m.LastError)
		}
	}
	// Both servers are dead: Home says no server answers, and which
	// failed how, not Connected.
	h.ui.tabs.SelectIndex(0)
	h.waitFor("Home to name the failed servers", func() bool {
		home := h.ui.home
		return home.state.Text == "No server reachable" && strings.Contains(home.reason.Text, "Hy2 Home") && strings.Contains(home.reason.Text, "Hy2 Second")
	})
	if r := h.ui.home.reason.Text; strings.Contains(r, "healthy") {
		t.Errorf("Home calls a dead server healthy: %q", r)
	}
}

func TestWindowFitsSmallScreens(t *testing.T) {
	h := newHarness(t, Prefs{}, addLinks(t, hy2Link, vlessLink))
	// A window manager's title bar takes some 30-40 px of a 800x600 screen.
	limit := fyne.NewSize(800, 560)
	for i, item := range h.ui.tabs.Items {
		min := item.Content.MinSize()
		t.Logf("%s: min %v", item.Text, min)
		if min.Width > limit.Width || min.Height > limit.Height-45 { // the tab bar
			t.Errorf("tab %d (%s) needs %v, more than fits in %v", i, item.Text, min, limit)
		}
	}
	if min := h.ui.win.Content().MinSize(); min.Width > limit.Width || min.Height > limit.Height {
		t.Errorf("window needs %v, more than fits in %v", min, limit)
	}
}

func TestConnectionsListAndClose(t *testing.T) {
	echo := nettest.TCPEcho(t)
	// Everything goes direct: a real relay without a proxy server.
	h := newHarness(t, Prefs{Listen: "127.0.0.1:0"}, func(p *profile.Profile) {
		addLinks(t, hy2Link)(p)
		p.Routes.Final = core.TargetDirect
	})
	test.Tap(h.ui.home.toggle)
	h.waitFor("the core to run", func() bool { return h.ui.home.toggle.Text == "Disconnect" })

	c := nettest.SOCKSConnect(t, h.ctrl.Status().Listen, echo)
	c.Write([]byte("hello"))
	if _, err := io.ReadFull(c, make([]byte, 5)); err != nil {
		t.Fatal(err)
	}

	h.ui.tabs.SelectIndex(3)
	v := h.ui.connections
	h.waitFor("the connection in the table", func() bool { return len(v.rows) == 1 })
	if got := v.cell(v.rows[0], 1); !strings.Contains(got, echo.String()) {
		t.Errorf("destination cell %q", got)
	}
	if got := v.cell(v.rows[0], 2); got != core.TargetDirect {
		t.Errorf("route cell %q, want direct", got)
	}
	if v.count.Text != "1 open connection" {
		t.Errorf("count %q", v.count.Text)
	}
	// The close button in the row's last cell ends the flow.
	cell := v.table.CreateCell()
	v.table.UpdateCell(widget.TableCellID{Row: 0, Col: len(connColumns) - 1}, cell)
	test.Tap(cell.(*fyne.Container).Objects[1].(*widget.Button))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("the closed connection still reads")
	}
	h.waitFor("the table to empty", func() bool { return len(v.rows) == 0 })
	// Totals on Home counted the relay.
	h.ui.tabs.SelectIndex(0)
	h.waitFor("the totals", func() bool { return strings.Contains(h.ui.home.totals.Text, "↑ 5 B") })
}

// manyNodes adds count Hysteria2 nodes named "Server N".
func manyNodes(t *testing.T, count int) func(p *profile.Profile) {
	return func(p *profile.Profile) {
		var nodes []*nodepkg.Node
		for i := range count {
			n, err := link.Parse(fmt.Sprintf("hysteria2://secret@10.%d.%d.1:443/?insecure=1#Server %d", i/250, i%250, i))
			if err != nil {
				t.Fatal(err)
			}
			nodes = append(nodes, n)
		}
		subscription.AddNodes(p, nodes)
	}
}

func TestThousandsOfNodes(t *testing.T) {
	const count = 5000
	h := newHarness(t, Prefs{}, manyNodes(t, count))
	v := h.ui.profiles
	if len(v.Shown()) != count {
		t.Fatalf("%d nodes shown, want %d", len(v.Shown()), count)
	}
	limit := time.Second
	if raceEnabled {
		limit *= 10
	}
	start := time.Now()
	test.Type(v.search, "Server 4999")
	t.Logf("search: %v", time.Since(start))
	if d := time.Since(start); d > limit {
		t.Errorf("searching %d nodes took %v", count, d)
	}
	if s := v.Shown(); len(s) != 1 || s[0] != "Server 4999" {
		t.Errorf("search shows %q", s)
	}
	start = time.Now()
	h.ui.reloadProfile()
	t.Logf("reload: %v", time.Since(start))
	if d := time.Since(start); d > 2*limit {
		t.Errorf("reloading a profile of %d nodes took %v", count, d)
	}
}

func TestDeadServerShowsOnHome(t *testing.T) {
	h := newHarness(t, Prefs{Listen: "127.0.0.1:0"}, addLinks(t, hy2Link)) // nothing serves 127.0.0.1:9
	test.Tap(h.ui.home.toggle)
	h.waitFor("the core to run", func() bool { return h.ui.home.toggle.Text == "Disconnect" })
	c, err := net.DialTimeout("tcp", h.ctrl.Status().Listen, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte{5, 1, 0, 5, 1, 0, 1, 127, 0, 0, 1, 0, 80})
	deadline := time.Now().Add(20 * time.Second)
	for h.ui.home.FlowNote() == "" {
		if time.Now().After(deadline) {
			t.Fatal("Home never showed that connections fail")
		}
		h.pump()
		time.Sleep(50 * time.Millisecond)
	}
	note := h.ui.home.FlowNote()
	if !strings.Contains(note, "Connections are failing") || strings.Contains(note, "secret") {
		t.Errorf("Home note %q", note)
	}
	t.Logf("Home says: %s", note)
	test.Tap(h.ui.home.toggle)
	h.waitFor("the note to go with the run", func() bool { return h.ui.home.FlowNote() == "" })
}

func TestPasteLinksFromTheClipboard(t *testing.T) {
	h := newHarness(t, Prefs{}, nil)
	h.ui.fa.Clipboard().SetContent(hy2Link + "\n" + vmessLink + "\n")
	msg := paste(h)
	if got := h.ui.profiles.Shown(); len(got) != 2 {
		t.Fatalf("after paste the list shows %q", got)
	}
	if !strings.Contains(msg, "Imported 2 nodes") || !strings.Contains(msg, "1 cannot be used") {
		t.Errorf("paste says %q", msg)
	}
	h.ui.fa.Clipboard().SetContent("")
	if msg := paste(h); !strings.Contains(msg, "clipboard holds no text") {
		t.Errorf("an empty paste says %q", msg)
	}
}

func TestRoutesReorderAndRules(t *testing.T) {
	h := newHarness(t, Prefs{Listen: "127.0.0.1:0"}, addLinks(t, vlessLink, hy2Link))
	v := h.ui.routes
	v.makeGroups()
	p, _ := h.store.Load()
	// "Fastest" over both, and the server's failover group.
	if len(p.Groups) != 2 || p.Groups[0].Name != subscription.FastestName || p.Groups[1].Type != profile.GroupFailover {
		t.Fatalf("groups made: %+v", p.Groups)
	}
	v.groupList.Select(1)
	first := func() string {
		p, _ := h.store.Load()
		return p.Node(p.Groups[1].Members[0]).Name()
	}
	if first() != "Hy2 Home" {
		t.Fatalf("the made group starts with %q, want Hy2 Home", first())
	}
	// The down button of the first member moves it to second place.
	row := v.memberList.CreateItem()
	v.memberList.UpdateItem(0, row)
	btns := row.(*fyne.Container).Objects[1].(*fyne.Container)
	test.Tap(btns.Objects[1].(*widget.Button))
	if first() != "VLESS Home" {
		t.Errorf("after moving down the group starts with %q", first())
	}

	v.preset.SetSelectedIndex(1) // bypass mainland China (core/preset's order)
	p, _ = h.store.Load()
	if len(p.Routes.Rules) != 3 || p.Routes.Rules[0].Type != "private" || p.Routes.Rules[1].Type != "rule_set" || len(p.Routes.RuleSets) != 2 {
		t.Fatalf("bypass preset saved rules %+v, sets %+v", p.Routes.Rules, p.Routes.RuleSets)
	}
	if v.ruleList.Length() != 5 {
		t.Errorf("the rules list shows %d rows, want the preset's 3 rules and 2 rule sets", v.ruleList.Length())
	}
	pl, err := plan.Build(p, plan.Request{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.Config.Rules) != 3 || !pl.Config.Rules[0].Private || pl.Config.Rules[0].Target != core.TargetDirect ||
		len(pl.Config.Rules[1].RuleSet) != 1 || pl.Config.Final != core.TargetProxy || len(pl.Config.RuleSets) != 2 {
		t.Errorf("the core gets rules %+v, final %s", pl.Config.Rules, pl.Config.Final)
	}
	// An edited preset is custom rules; choosing a preset then asks first.
	v.removeRule(2)
	if custom := len(preset.List()); v.preset.SelectedIndex() != custom {
		t.Errorf("after an edit the chooser shows %q, want %q", v.preset.Selected, presetTitles()[custom])
	}
	// A subscription's own rules follow the user's: used ones plainly,
	// the ones Skiff cannot express greyed with the reason, none deletable.
	v.u.update(func(p *profile.Profile) error {
		p.Subscriptions = append(p.Subscriptions, &profile.Subscription{ID: "sr", URL: "https://provider.example/s", Title: "Provider",
			Routes: &profile.SubRoutes{Total: 3, Final: "direct",
				Rules:  []profile.Rule{{Type: "domain_suffix", Values: []string{"google.com"}, Target: "🚀 Proxy"}},
				Greyed: []profile.Greyed{{Rule: "SRC-PORT,7777,DIRECT", Reason: "conditions on the flow's source"}}}})
		return nil
	})
	// rows: 2 rules, 2 rule sets, the subscription's rule, final, greyed.
	if len(v.rows) != 7 || !strings.HasPrefix(v.rows[2].text, "rule set geosite-cn") || v.rows[4].user != -1 || v.rows[4].greyed || !v.rows[6].greyed || !strings.Contains(v.rows[6].text, "not used: conditions") {
		t.Errorf("rows %+v", v.rows)
	}
	v.subRules.SetSelectedIndex(2) // not used
	if p, _ := h.store.Load(); p.Routes.SubscriptionRules != profile.SubRulesOff || !v.rows[4].greyed {
		t.Errorf("subscription rules off: saved %q, row %+v", p.Routes.SubscriptionRules, v.rows[4])
	}

	// The rule sets' rows say how each running set stands: a failed
	// download with the list kept, one that never came.
	h.ui.mu.Lock()
	h.ui.live.st.RuleSets = []core.RuleSetState{
		{Name: "geosite-cn", Updated: time.Now().Add(-3 * time.Hour), Err: "rule set geosite-cn: HTTP 502 from raw.githubusercontent.com", Stats: ruleset.Stats{Domains: 110000}},
		{Name: "geoip-cn", Err: "rule set geoip-cn: dial: connection refused"},
	}
	h.ui.mu.Unlock()
	v.update()
	if !strings.Contains(v.rows[2].text, "last download failed: rule set geosite-cn: HTTP 502") || !strings.Contains(v.rows[2].text, "updated 3 h ago: 110000 domains") {
		t.Errorf("failed set's row %q", v.rows[2].text)
	}
	if !strings.Contains(v.rows[3].text, "no list yet") {
		t.Errorf("never loaded set's row %q", v.rows[3].text)
	}
	// Refresh while disconnected says to connect first.
	v.refreshSets()
	h.waitFor("the refresh's outcome", func() bool { return v.setsNote.Text == tr("routes.ruleSetsNotRunning") })
}

func TestSettingsSave(t *testing.T) {
	h := newHarness(t, Prefs{}, nil)
	v := h.ui.settings
	v.listen.SetText("192.168.1.2:1080")
	v.save()
	if !strings.Contains(v.status.Text, "loopback") {
		t.Errorf("a LAN listen address was not refused: %q", v.status.Text)
	}
	v.listen.SetText("127.0.0.1:1181")
	v.mtu.SetText("1400")
	v.probe.SetText("http://127.0.0.1/generate_204")
	v.refresh.SetSelectedIndex(1)
	v.startConn.SetChecked(true)
	v.save()
	if !strings.HasPrefix(v.status.Text, "Saved") {
		t.Fatalf("save says %q", v.status.Text)
	}
	got, err := loadPrefs(h.store.Dir())
	if err != nil || got.Listen != "127.0.0.1:1181" || !got.StartConnected {
		t.Errorf("prefs %+v, %v", got, err)
	}
	p, _ := h.store.Load()
	if p.Settings.TUN.MTU != 1400 || p.Settings.ProbeURL != "http://127.0.0.1/generate_204" || time.Duration(p.Settings.RefreshInterval) != 6*time.Hour {
		t.Errorf("profile settings %+v", p.Settings)
	}
}

func TestRecoveredPanicsShowOnHome(t *testing.T) {
	h := newHarness(t, Prefs{}, nil)
	home := h.ui.home
	home.update(api.Status{State: core.Running}, core.Snapshot{Connections: 2})
	if got := home.conns.Text; strings.Contains(got, "internal error") {
		t.Errorf("with no panic recovered Home says %q", got)
	}
	home.update(api.Status{State: core.Running}, core.Snapshot{Connections: 2, Panics: 3})
	if got := home.conns.Text; !strings.Contains(got, "internal errors recovered: 3") {
		t.Errorf("Home says %q; want the count of recovered panics", got)
	}
}

// countingBackend counts the calls that sample the core and records the
// Watch options asked for.
type countingBackend struct {
	api.Backend
	mu    sync.Mutex
	stats int
	watch []api.WatchOptions
}

func (b *countingBackend) Stats(ctx context.Context) (core.Snapshot, error) {
	b.mu.Lock()
	b.stats++
	b.mu.Unlock()
	return b.Backend.Stats(ctx)
}

func (b *countingBackend) Watch(ctx context.Context, o api.WatchOptions) (<-chan api.Notice, error) {
	b.mu.Lock()
	b.watch = append(b.watch, o)
	b.mu.Unlock()
	return b.Backend.Watch(ctx, o)
}

func (b *countingBackend) statsCalls() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stats
}

// An idle window samples nothing: no ticker while disconnected, while
// hidden to the tray, or while a tab without live figures is in front;
// the ticker runs only while connected with Home, Routes or Connections
// shown. The Watch stream carries no per-second stats.
func TestSamplingOnlyWhileShownAndConnected(t *testing.T) {
	var b *countingBackend
	h := newHarnessWith(t, Prefs{Listen: "127.0.0.1:0"}, addLinks(t, hy2Link), func(inner api.Backend) api.Backend {
		b = &countingBackend{Backend: inner}
		return b
	})
	u := h.ui
	h.pump()
	if u.isTicking() {
		t.Fatal("the window ticks while disconnected")
	}
	b.mu.Lock()
	for _, o := range b.watch {
		if o.Stats {
			t.Errorf("the window watches with %+v: stats once a second for every watcher", o)
		}
	}
	b.mu.Unlock()
	before := b.statsCalls()
	u.tabs.SelectIndex(3) // choosing a tab asks once, starts nothing
	u.tabs.SelectIndex(0)
	h.waitFor("the tab changes to be seen", func() bool { return b.statsCalls() > before })
	if u.isTicking() {
		t.Fatal("the window ticks while disconnected, after a tab change")
	}

	test.Tap(u.home.toggle)
	h.waitFor("sampling while connected on Home", func() bool { return u.home.toggle.Text == "Disconnect" && u.isTicking() })
	u.tabs.SelectIndex(4) // Logs: no live figure
	h.waitFor("no sampling behind the Logs tab", func() bool { return !u.isTicking() })
	u.tabs.SelectIndex(2) // Routes shows the groups
	h.waitFor("sampling for Routes", u.isTicking)
	u.tabs.SelectIndex(0)
	u.hideWindow()
	h.waitFor("no sampling while hidden", func() bool { return !u.isTicking() })
	u.showWindow()
	h.waitFor("sampling once shown again", u.isTicking)
	test.Tap(u.home.toggle)
	h.waitFor("no sampling once disconnected", func() bool { return u.home.toggle.Text == "Connect" && !u.isTicking() })
	if n := u.home.graph.Samples(); n != 0 {
		t.Errorf("the graph keeps %d samples of the ended run", n)
	}
}

func TestGraphShows(t *testing.T) {
	now := time.Now()
	s := func(rates ...int64) []stats.Sample {
		var out []stats.Sample
		for i, r := range rates {
			out = append(out, stats.Sample{Time: now.Add(time.Duration(i) * time.Second), Up: r, Down: 2 * r})
		}
		return out
	}
	g := newGraph()
	g.SetSamples(s(0, 0, 5))
	later := s(0, 0, 5)
	for i := range later {
		later[i].Time = later[i].Time.Add(time.Second)
	}
	for _, c := range []struct {
		name string
		in   []stats.Sample
		want bool
	}{
		{"same rates", s(0, 0, 5), true},
		{"same rates a second later", later, true},
		{"a rate changed", s(0, 1, 5), false},
		{"one more sample", s(0, 0, 5, 0), false},
		{"none", nil, false},
	} {
		if got := g.Shows(c.in); got != c.want {
			t.Errorf("%s: Shows = %v, want %v", c.name, got, c.want)
		}
	}
	full := make([]int64, stats.Window+5)
	g.SetSamples(s(full...))
	if !g.Shows(s(full...)) {
		t.Error("a series longer than the window: Shows compares the samples drawn")
	}
}
