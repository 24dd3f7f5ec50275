package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/plan"
	"github.com/skiffvpn/skiff/core/profile"
)

const hy2Link = "hysteria2://secret@127.0.0.1:9/?insecure=1#Hy2 Home"

// pair returns the in-process backend and a client of it over a real Unix
// socket served by Handler.
func pair(t *testing.T) (*Local, *Client) {
	t.Helper()
	l := newLocal(t)
	sock := filepath.Join(t.TempDir(), "api.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: NewHandler(l, HandlerOptions{})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	c := NewClient(func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	})
	t.Cleanup(c.Close)
	return l, c
}

func TestBothBackendsAgree(t *testing.T) {
	l, c := pair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for name, b := range map[string]Backend{"local": l, "client": c} {
		t.Run(name, func(t *testing.T) {
			// Typed errors cross the socket.
			if _, err := b.Connect(ctx, plan.Request{Mode: plan.ModeProxy, Listen: "127.0.0.1:0"}); !errors.Is(err, ErrNoServer) {
				t.Errorf("connect without a server: %v, want ErrNoServer", err)
			}
			if _, err := b.Connect(ctx, plan.Request{Mode: "bogus"}); !errors.Is(err, ErrBadRequest) {
				t.Errorf("connect with a bad mode: %v, want ErrBadRequest", err)
			}
			if _, err := b.Exit(ctx, true); !errors.Is(err, ErrNotConnected) {
				t.Errorf("exit while stopped: %v, want ErrNotConnected", err)
			}
			if err := b.CloseConnection(ctx, 12345); !errors.Is(err, ErrNotFound) {
				t.Errorf("close of no connection: %v, want ErrNotFound", err)
			}
			if _, err := b.Refresh(ctx, "nope"); !errors.Is(err, ErrNotFound) {
				t.Errorf("refresh of no subscription: %v", err)
			}
			if _, err := b.RefreshRuleSets(ctx, nil); !errors.Is(err, ErrNotFound) {
				t.Errorf("rule-set refresh while stopped: %v, want ErrNotFound", err)
			}
			if _, err := b.RefreshRuleSets(ctx, []string{strings.Repeat("n", 129)}); !errors.Is(err, ErrBadRequest) {
				t.Errorf("rule-set refresh of a long name: %v, want ErrBadRequest", err)
			}
			if _, err := b.Import(ctx, ImportRequest{URL: "http://127.0.0.1:1/sub"}); !errors.Is(err, ErrSubscriptionFetch) {
				t.Errorf("import of a dead URL: %v, want ErrSubscriptionFetch", err)
			}
		})
	}

	// A watcher on the client sees what a second client does.
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	ch, err := c.Watch(wctx, WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := <-ch; n.Kind != NoticeStatus || n.Status == nil || n.Status.State != core.Stopped {
		t.Fatalf("first notice %+v, want the status", n)
	}
	res, err := c.Import(ctx, ImportRequest{Body: hy2Link})
	if err != nil || res.Added != 1 {
		t.Fatalf("import: %+v %v", res, err)
	}
	waitKind(t, ch, NoticeProfile)
	p, rev, err := l.Profile(ctx)
	if err != nil || len(p.Nodes) != 1 {
		t.Fatalf("profile: %v %v", p, err)
	}
	// A stale revision is refused; the current one is taken.
	p.Selected = p.Nodes[0].ID
	if err := c.SetProfile(ctx, p, "stale"); !errors.Is(err, ErrConflict) {
		t.Errorf("stale revision: %v", err)
	}
	if err := c.SetProfile(ctx, p, rev); err != nil {
		t.Fatal(err)
	}
	rt, err := c.Connect(ctx, plan.Request{Listen: "127.0.0.1:0"})
	if err != nil || rt.Name != "Hy2 Home" {
		t.Fatalf("connect: %+v %v", rt, err)
	}
	n := waitKind(t, ch, NoticeStatus)
	for n.Status.State != core.Running {
		n = waitKind(t, ch, NoticeStatus)
	}
	if n.Status.Route == nil || n.Status.Route.Name != "Hy2 Home" {
		t.Errorf("running status without the route: %+v", n.Status)
	}
	if _, err := c.Connect(ctx, plan.Request{Listen: "127.0.0.1:0"}); !errors.Is(err, ErrRunning) {
		t.Errorf("second connect: %v, want ErrRunning", err)
	}
	st, err := c.Status(ctx)
	if err != nil || st.State != core.Running || st.Listen == "" {
		t.Errorf("status: %+v %v", st, err)
	}
	if err := c.Disconnect(ctx); err != nil {
		t.Fatal(err)
	}
	if st, _ := l.Status(ctx); st.State != core.Stopped || st.Route != nil {
		t.Errorf("after disconnect: %+v", st)
	}
	// A profile that names a path is refused and changes nothing.
	bad := profile.New()
	bad.Subscriptions = []*profile.Subscription{{ID: "x", URL: "file:///etc/shadow"}}
	if err := c.SetProfile(ctx, bad, ""); !errors.Is(err, ErrBadRequest) {
		t.Errorf("file URL: %v", err)
	}
	if p, _, _ := l.Profile(ctx); len(p.Nodes) != 1 {
		t.Error("a refused profile changed the saved one")
	}
}

func waitKind(t *testing.T, ch <-chan Notice, k NoticeKind) Notice {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case n, ok := <-ch:
			if !ok {
				t.Fatalf("stream ended waiting for %s", k)
			}
			if n.Kind == k {
				return n
			}
		case <-timeout:
			t.Fatalf("no %s notice", k)
		}
	}
}

func TestHandlerRefusesBadRequests(t *testing.T) {
	l, _ := pair(t)
	h := NewHandler(l, HandlerOptions{Authorize: func(r *http.Request) error {
		if r.Header.Get("X-Test-Deny") != "" {
			return errors.New("denied")
		}
		return nil
	}})
	for _, tc := range []struct {
		method, path, body string
		deny               bool
		code               Code
	}{
		{"POST", "/v1/connect", `{"mode":`, false, CodeBadRequest},
		{"POST", "/v1/connect", `{"mode":"tun"} {"mode":"proxy"}`, false, CodeBadRequest},
		{"POST", "/v1/connect", `{"command":"rm -rf /"}`, false, CodeBadRequest},
		// Root would listen on a system service's port for a member.
		{"POST", "/v1/connect", `{"mode":"proxy","listen":"127.0.0.1:25"}`, false, CodeBadRequest},
		{"POST", "/v1/connect", `{"mode":"proxy","listen":"0.0.0.0:7890"}`, false, CodeBadRequest},
		{"POST", "/v1/connect", `{"target":"` + strings.Repeat("x", maxRequest) + `"}`, false, CodeTooLarge},
		{"POST", "/v1/disconnect", `{"x":1}`, false, CodeBadRequest},
		{"POST", "/v1/routing", `{"routing":"everything"}`, false, CodeBadRequest},
		{"POST", "/v1/routing", `{"routing":"global","mode":"tun"}`, false, CodeBadRequest},
		{"POST", "/v1/routing", `{"routing":1}`, false, CodeBadRequest},
		{"POST", "/v1/routing", `{"routing":"` + strings.Repeat("g", 1000) + `"}`, false, CodeBadRequest},
		{"POST", "/v1/routing", `{"routing":"` + strings.Repeat("g", maxRequest) + `"}`, false, CodeTooLarge},
		{"GET", "/v1/routing", "", false, CodeNotFound},
		{"GET", "/v2/status", "", false, CodeUnsupportedVersion},
		{"GET", "/status", "", false, CodeNotFound},
		{"DELETE", "/v1/connections/abc", "", false, CodeBadRequest},
		{"POST", "/v1/rulesets/refresh", `{"names":"all"}`, false, CodeBadRequest},
		{"POST", "/v1/rulesets/refresh", `{"names":[""]}`, false, CodeBadRequest},
		{"POST", "/v1/rulesets/refresh", `{"url":"http://x/"}`, false, CodeBadRequest},
		{"POST", "/v1/rulesets/refresh", `{"names":["` + strings.Repeat("x", maxRequest) + `"]}`, false, CodeTooLarge},
		{"POST", "/v1/rulesets/refresh", `{}`, false, CodeNotFound},
		{"GET", "/v1/status", "", true, CodeForbidden},
	} {
		req, _ := http.NewRequest(tc.method, "http://skiff"+tc.path, strings.NewReader(tc.body))
		if tc.deny {
			req.Header.Set("X-Test-Deny", "1")
		}
		w := &recorder{h: http.Header{}}
		h.ServeHTTP(w, req)
		e, _ := readError(w.status, strings.NewReader(w.body.String()), nil).(*Error)
		if e == nil || e.Code != tc.code {
			t.Errorf("%s %s: %d %s, want %s", tc.method, tc.path, w.status, w.body.String(), tc.code)
		}
	}
}

// recorder is a minimal http.ResponseWriter.
type recorder struct {
	h      http.Header
	status int
	body   strings.Builder
}

func (r *recorder) Header() http.Header { return r.h }
func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = 200
	}
	return r.body.Write(b)
}
func (r *recorder) WriteHeader(s int) { r.status = s }

// FuzzDecodeRequest feeds arbitrary bodies to the request decoding of every
// request type: it must return an error or a value, never panic, and a
// decoded request must pass or fail its own validation cleanly.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"mode":"tun","target":"n1","listen":"127.0.0.1:1080","dns":"fake-ip"}`, `{"url":"https://x/sub"}`,
		`{"body":"hysteria2://a@b:1"}`, `{"ids":["a","b"]}`, `{"profile":{"version":1}}`, `{"mode":`, `[1,2]`, `null`, "\x00",
		`{"mode":"tun"}{"mode":"tun"}`, `{"noIPv6":"yes"}`,
		`{"routing":"global"}`, `{"routing":"rule\u0000"}`,
		`{"names":["cn","geoip-cn"]}`, `{"names":[""]}`, `{"names":null}`, `{"mode":"proxy","listen":"127.0.0.1:25"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var req plan.Request
		if err := DecodeRequest(strings.NewReader(string(b)), maxRequest, &req); err == nil {
			req.Validate()
		} else if CodeOf(err) != CodeBadRequest && CodeOf(err) != CodeTooLarge {
			t.Fatalf("decode error with code %s", CodeOf(err))
		}
		var imp ImportRequest
		DecodeRequest(strings.NewReader(string(b)), maxRequest, &imp)
		var rr RoutingRequest
		if err := DecodeRequest(strings.NewReader(string(b)), maxRequest, &rr); err == nil {
			if m, err := core.ParseRouting(rr.Routing); err == nil && m != core.RoutingRule && string(m) != rr.Routing {
				t.Fatalf("routing %q read as %q", rr.Routing, m)
			}
		}
		var doc profileDoc
		if err := DecodeRequest(strings.NewReader(string(b)), maxRequest, &doc); err == nil && doc.Profile != nil {
			CheckProfile(doc.Profile)
		}
		var pr probeRequest
		DecodeRequest(strings.NewReader(string(b)), maxRequest, &pr)
		var rs ruleSetsRequest
		if err := DecodeRequest(strings.NewReader(string(b)), maxRequest, &rs); err == nil {
			if err := checkRuleSetNames(rs.Names); err != nil && CodeOf(err) != CodeBadRequest {
				t.Fatalf("rule-set names refused with code %s", CodeOf(err))
			}
		}
		DecodeRequest(strings.NewReader(string(b)), maxRequest, nil)
	})
}

// TestRefreshRuleSets: over the socket, a refresh downloads the running
// rule set now and answers with its state once the rules hold the new
// list; a failed download says why and keeps the list.
func TestRefreshRuleSets(t *testing.T) {
	l, c := pair(t)
	var mu sync.Mutex
	status, body := 200, "+.a.example\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Import(ctx, ImportRequest{Body: hy2Link}); err != nil {
		t.Fatal(err)
	}
	if err := Update(ctx, c, func(p *profile.Profile) error {
		p.Routes.RuleSets = []profile.RuleSet{{Name: "list", URL: srv.URL + "/list.txt", Format: "clash-domain"}}
		p.Routes.Rules = []profile.Rule{{Type: "rule_set", Values: []string{"list"}, Target: "direct"}}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Connect(ctx, plan.Request{Listen: "127.0.0.1:0"}); err != nil {
		t.Fatal(err)
	}
	defer l.Disconnect(ctx)
	mu.Lock()
	body = "+.a.example\n+.b.example\n"
	mu.Unlock()
	st, err := c.RefreshRuleSets(ctx, nil)
	if err != nil || len(st) != 1 || st[0].Stats.Domains != 2 || st[0].Err != "" {
		t.Fatalf("refresh: %+v %v, want the list of 2", st, err)
	}
	mu.Lock()
	status = 500
	mu.Unlock()
	st, err = c.RefreshRuleSets(ctx, []string{"list"})
	if err != nil || len(st) != 1 || st[0].Stats.Domains != 2 || !strings.Contains(st[0].Err, "500") {
		t.Fatalf("refresh of a failing list: %+v %v, want its error and the old list", st, err)
	}
	if _, err := c.RefreshRuleSets(ctx, []string{"other"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("refresh of an unknown set: %v, want ErrNotFound", err)
	}
	if s, _ := c.Status(ctx); len(s.RuleSets) != 1 || s.RuleSets[0].Err == "" {
		t.Errorf("Status.RuleSets %+v, want the failure", s.RuleSets)
	}
}

func TestSortByLatency(t *testing.T) {
	rs := []ProbeResult{
		{ID: "failed", Error: &Error{Code: CodeInternal, Message: "x"}},
		{ID: "slow", Latency: 300 * time.Millisecond},
		{ID: "timeout", Timeout: true, Error: &Error{Code: CodeInternal, Message: "timeout"}},
		{ID: "fast", Latency: 20 * time.Millisecond},
		{ID: "mid", Latency: 80 * time.Millisecond},
		{ID: "failed2", Error: &Error{Code: CodeInternal, Message: "y"}},
	}
	SortByLatency(rs)
	var got []string
	for _, r := range rs {
		got = append(got, r.ID)
	}
	if want := "fast,mid,slow,timeout,failed,failed2"; strings.Join(got, ",") != want {
		t.Errorf("order %s, want %s", strings.Join(got, ","), want)
	}
}

// TestImportFileIsASubscription: a body with a file name is listed as a
// subscription of that name, with the groups an import makes; the same
// file again replaces its nodes; it has no URL to refresh.
func TestImportFileIsASubscription(t *testing.T) {
	store, err := profile.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	l := NewLocal(core.NewController(core.Options{LogOutput: io.Discard}), store, nil)
	body := "hysteria2://pw@hk.example.com:443#HK Hy2\nvless://b831381d-6324-4d53-ad4f-8cda48b30811@hk.example.com:443?encryption=none&security=tls&type=ws&path=%2Fws#HK WS\n"
	res, err := l.Import(context.Background(), ImportRequest{Body: body, Source: "my-vpn.txt"})
	if err != nil || res.Added != 2 || res.Subscription == "" || res.Existing {
		t.Fatalf("%+v %v", res, err)
	}
	p, _ := store.Load()
	s := p.Subscription(res.Subscription)
	if s == nil || s.DisplayName() != "my-vpn.txt" || len(p.Groups) != 2 {
		t.Fatalf("subscription %+v, %d groups", s, len(p.Groups))
	}
	for _, n := range p.Nodes {
		if n.Subscription != s.ID {
			t.Errorf("node %s is not the file's", n.Name())
		}
	}
	if res, err = l.Import(context.Background(), ImportRequest{Body: body, Source: "my-vpn.txt"}); err != nil || res.Added != 0 || !res.Existing {
		t.Errorf("the same file again: %+v %v", res, err)
	}
	if _, err := l.Refresh(context.Background(), s.ID); !IsCode(err, CodeBadRequest) {
		t.Errorf("refreshing a file's import: %v", err)
	}
	if err := CheckProfile(p); err != nil {
		t.Errorf("a profile with a file's import is refused: %v", err)
	}
	if _, err := l.Import(context.Background(), ImportRequest{Body: body, Source: "bad\nname"}); !IsCode(err, CodeBadRequest) {
		t.Errorf("a source with a line break: %v", err)
	}
}

// TestSetProfileRefusesBadTUNName: issue 28's nft injection through
// settings.tun.name, sent as a client would, is answered bad_request (HTTP
// 400) with the reason, and the saved profile stays as it was.
func TestSetProfileRefusesBadTUNName(t *testing.T) {
	l, c := pair(t)
	ctx := context.Background()
	if _, err := c.Import(ctx, ImportRequest{Body: hy2Link}); err != nil {
		t.Fatal(err)
	}
	p, rev, err := l.Profile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const payload = `x" accept; }; }; flush ruleset; table ip pwn { chain out { type nat hook output priority -100; udp dport 53 redirect to :5353; }; }; table inet skiff_killswitch { chain output { #`
	for _, name := range []string{payload, "utun9 all\npass out quick all\n#"} {
		p.Settings.TUN.Name, p.Settings.TUN.KillSwitch = name, true
		err := c.SetProfile(ctx, p, rev)
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeBadRequest || !strings.Contains(e.Message, "device name") {
			t.Errorf("SetProfile with TUN name %q: %v, want bad_request naming the device name", name, err)
		}
		if _, now, _ := l.Profile(ctx); now != rev {
			t.Errorf("a refused profile changed the saved one")
		}
		body, _ := json.Marshal(profileDoc{Profile: p})
		req, _ := http.NewRequest("PUT", "http://skiff/v1/profile", strings.NewReader(string(body)))
		w := &recorder{h: http.Header{}}
		NewHandler(l, HandlerOptions{}).ServeHTTP(w, req)
		if w.status != http.StatusBadRequest {
			t.Errorf("PUT /v1/profile with TUN name %q: %d %s", name, w.status, w.body.String())
		}
	}
}
