package subscription

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/profile"
)

func TestParseUserInfo(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want *profile.UserInfo
	}{
		{"upload=455727941; download=6174315083; total=1073741824000; expire=1767225600",
			&profile.UserInfo{Upload: 455727941, Download: 6174315083, Total: 1073741824000, Expire: time.Unix(1767225600, 0).UTC()}},
		{"total=100;download=5", &profile.UserInfo{Download: 5, Total: 100}},
		{" Upload = 1 ; DOWNLOAD=2; total=3; expire=0; extra=x", &profile.UserInfo{Upload: 1, Download: 2, Total: 3}},
		{"upload=1.2e3; download=0; total=1e4", &profile.UserInfo{Upload: 1200, Total: 10000}},
		{"upload=-1", nil},
		{"download=lots", nil},
		{"nothing here", nil},
		{"", nil},
	} {
		got, err := ParseUserInfo(tc.in)
		if tc.want == nil {
			if err == nil {
				t.Errorf("%q: want error, got %+v", tc.in, got)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: got %+v %v, want %+v", tc.in, got, err, tc.want)
		}
	}
}

func TestParseHeaders(t *testing.T) {
	h := http.Header{}
	h.Set("Subscription-Userinfo", "upload=1; download=2; total=10; expire=1767225600")
	h.Set("Profile-Update-Interval", "12")
	h.Set("Profile-Title", "base64:"+base64.StdEncoding.EncodeToString([]byte("我的机场 ✈")))
	h.Set("Profile-Web-Page-Url", "https://panel.example.com/user")
	h.Set("Content-Disposition", `attachment; filename="ignored.yaml"`)
	info := ParseHeaders(h)
	if info.Title != "我的机场 ✈" || info.UpdateInterval != 12*time.Hour || info.WebPageURL != "https://panel.example.com/user" || info.UserInfo.Total != 10 {
		t.Fatalf("%+v", info)
	}
	h = http.Header{}
	h.Set("Content-Disposition", `attachment; filename*=UTF-8''%E6%B5%8B%E8%AF%95.yaml`)
	h.Set("Profile-Web-Page-Url", "javascript:alert(1)")
	h.Set("Profile-Update-Interval", "soon")
	info = ParseHeaders(h)
	if info.Title != "测试.yaml" || info.WebPageURL != "" || info.UpdateInterval != 0 || info.UserInfo != nil {
		t.Fatalf("%+v", info)
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"https://sub.example.com/api/v1/client/subscribe?token=abc123": "https://sub.example.com/…",
		"https://user:pw@sub.example.com:8443/s/abc123":                "https://sub.example.com:8443/…",
		"http://sub.example.com/":                                      "http://sub.example.com",
		"::not a url":                                                  "(invalid URL)",
	} {
		if got := Redact(in); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}

// testServer serves a subscription whose body and headers the test changes.
type testServer struct {
	*httptest.Server
	mu      sync.Mutex
	body    []byte
	status  int
	ctype   string
	headers map[string]string
	hits    atomic.Int32
	ua      atomic.Value
}

func newTestServer(t *testing.T, body string) *testServer {
	ts := &testServer{body: []byte(body), status: 200}
	ts.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ts.hits.Add(1)
		ts.ua.Store(r.UserAgent())
		ts.mu.Lock()
		defer ts.mu.Unlock()
		if r.URL.Path == "/redirect-loop" {
			http.Redirect(w, r, "/redirect-loop", http.StatusFound)
			return
		}
		if r.URL.Path == "/huge" {
			w.Header().Set("Content-Type", "text/plain")
			chunk := []byte(strings.Repeat("hysteria2://a@b.example.com:443#x\n", 1000))
			for range 100 << 20 / len(chunk) {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
			return
		}
		for k, v := range ts.headers {
			w.Header().Set(k, v)
		}
		if ts.ctype != "" {
			w.Header().Set("Content-Type", ts.ctype)
		}
		w.WriteHeader(ts.status)
		w.Write(ts.body)
	}))
	t.Cleanup(ts.Close)
	return ts
}

func (ts *testServer) set(status int, ctype, body string) {
	ts.mu.Lock()
	ts.status, ts.ctype, ts.body = status, ctype, []byte(body)
	ts.mu.Unlock()
}

func (ts *testServer) fetcher() *Fetcher {
	c := NewHTTPClient(&tls.Config{RootCAs: ts.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs})
	return &Fetcher{Client: c, UserAgent: UserAgent("test")}
}

func TestFetch(t *testing.T) {
	ts := newTestServer(t, base64.StdEncoding.EncodeToString([]byte(uriList)))
	ts.headers = map[string]string{
		"Subscription-Userinfo":   "upload=1; download=2; total=1000",
		"Profile-Update-Interval": "6",
		"Content-Disposition":     "attachment; filename=Provider",
	}
	f := ts.fetcher()
	got, err := f.Fetch(context.Background(), ts.URL+"/sub?token=SECRET")
	if err != nil {
		t.Fatal(err)
	}
	if got.Info.Title != "Provider" || got.Info.UpdateInterval != 6*time.Hour || got.Info.UserInfo.Remaining() != 997 {
		t.Errorf("info %+v", got.Info)
	}
	if ua := ts.ua.Load().(string); !strings.Contains(ua, "clash.meta") || !strings.HasPrefix(ua, "Skiff/test") {
		t.Errorf("user agent %q", ua)
	}

	errCases := []struct {
		name, path string
		setup      func()
		want       string
		is         error
	}{
		{"status", "/sub?token=SECRET", func() { ts.set(403, "text/plain", "forbidden") }, "403", nil},
		{"html page", "/sub?token=SECRET", func() { ts.set(200, "text/html; charset=utf-8", "<html><body>login</body></html>") }, "", ErrHTML},
		{"redirect loop", "/redirect-loop?token=SECRET", nil, "redirects", nil},
		{"100 MB body", "/huge?token=SECRET", nil, "", ErrTooLarge},
	}
	for _, tc := range errCases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setup != nil {
				tc.setup()
			}
			start := time.Now()
			_, err := f.Fetch(context.Background(), ts.URL+tc.path)
			if err == nil {
				t.Fatal("no error")
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v, want %v", err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q lacks %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "SECRET") {
				t.Errorf("error leaks the token: %v", err)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}

	// Certificate verification is on by default.
	if _, err := (&Fetcher{}).Fetch(context.Background(), ts.URL+"/sub?token=SECRET"); err == nil || strings.Contains(err.Error(), "SECRET") {
		t.Errorf("self-signed certificate accepted or token leaked: %v", err)
	}
	if _, err := f.Fetch(context.Background(), "ftp://x.example.com/SECRET"); err == nil || strings.Contains(err.Error(), "SECRET") {
		t.Errorf("ftp: %v", err)
	}
}

func TestFetchTimeout(t *testing.T) {
	block := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	defer ts.Close()
	defer close(block)
	c := NewHTTPClient(nil)
	c.Timeout = 300 * time.Millisecond
	start := time.Now()
	_, err := (&Fetcher{Client: c}).Fetch(context.Background(), ts.URL+"/s/SECRET")
	if err == nil || strings.Contains(err.Error(), "SECRET") || time.Since(start) > 5*time.Second {
		t.Fatalf("err %v after %v", err, time.Since(start))
	}
}

func newStore(t *testing.T) *profile.Store {
	s, err := profile.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func addSub(t *testing.T, s *profile.Store, id, url string) {
	if err := s.Update(func(p *profile.Profile) error {
		p.Subscriptions = append(p.Subscriptions, &profile.Subscription{ID: id, URL: url})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestRefreshKeepsUserState: a refresh keeps renames, groups and the
// selection for nodes that still exist; bad bodies change nothing but the
// recorded error.
func TestRefreshKeepsUserState(t *testing.T) {
	ts := newTestServer(t, clashYAML)
	ts.headers = map[string]string{"Subscription-Userinfo": "upload=1; download=2; total=1000; expire=1767225600", "Profile-Title": "Prov"}
	store := newStore(t)
	addSub(t, store, "s1", ts.URL+"/sub?token=SECRET")
	f := ts.fetcher()
	ctx := context.Background()
	res, err := Refresh(ctx, store, f, "s1")
	if err != nil {
		t.Fatal(err)
	}
	p, _ := store.Load()
	if len(p.Nodes) != len(res.Nodes) || p.Subscriptions[0].Title != "Prov" || p.Subscriptions[0].UserInfo.Total != 1000 || len(p.Subscriptions[0].Warnings) != 4 {
		t.Fatalf("after first refresh: %d nodes, sub %+v", len(p.Nodes), p.Subscriptions[0])
	}
	if p.Nodes[0].Unsupported != "" || p.Nodes[3].Unsupported == "" {
		t.Errorf("supported flags: %q %q", p.Nodes[0].Unsupported, p.Nodes[3].Unsupported)
	}
	if p.Nodes[0].Lack != nil || p.Nodes[3].Lack == nil {
		t.Errorf("lacks: %+v %+v, want the unsupported node's as data", p.Nodes[0].Lack, p.Nodes[3].Lack)
	}
	hyID, vlID, vmID := p.Nodes[0].ID, p.Nodes[1].ID, p.Nodes[3].ID
	// The user's choices.
	if err := store.Update(func(p *profile.Profile) error {
		p.Node(hyID).Rename = "my favourite"
		p.Groups = []*profile.Group{{ID: "g1", Name: "auto", Type: profile.GroupFailover, Members: []string{vlID, hyID, vmID}}}
		p.Selected = vlID
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	before, _ := store.Load()

	// Bad refreshes: nothing but the error record changes.
	for _, bad := range []struct {
		status      int
		ctype, body string
	}{
		{500, "text/plain", "oops"},
		{200, "text/html", "<!doctype html><title>Cloudflare</title>"},
		{200, "text/plain", ""},
		{200, "application/json", `{"outbounds": [`},
		{200, "text/plain", "proxies: []\n"},
		{200, "text/plain", "%%%% not base64 %%%%"},
		{200, "text/plain", "\xff\xfe\x00garbage"},
	} {
		ts.set(bad.status, bad.ctype, bad.body)
		if _, err := Refresh(ctx, store, f, "s1"); err == nil {
			t.Fatalf("bad body %q accepted", bad.body)
		}
		p, _ := store.Load()
		sub := p.Subscriptions[0]
		if sub.LastError == "" || strings.Contains(sub.LastError, "SECRET") {
			t.Errorf("last error %q", sub.LastError)
		}
		if !reflect.DeepEqual(p.Nodes, before.Nodes) || !reflect.DeepEqual(p.Groups, before.Groups) || p.Selected != before.Selected {
			t.Fatalf("bad body %q changed the profile", bad.body)
		}
	}
	p, _ = store.Load()
	if p.Subscriptions[0].Failures != 7 {
		t.Errorf("failures %d", p.Subscriptions[0].Failures)
	}

	// The provider renames a node, drops the vmess one and reorders.
	newBody := strings.Replace(clashYAML, `"🇺🇸 US Hysteria2"`, `"🇺🇸 US Hysteria2 (new name)"`, 1)
	i := strings.Index(newBody, "  - name: vmess-grpc")
	j := strings.Index(newBody, "  - name: ss-obfs")
	newBody = newBody[:i] + newBody[j:]
	ts.set(200, "text/yaml", newBody)
	if _, err := Refresh(ctx, store, f, "s1"); err != nil {
		t.Fatal(err)
	}
	p, _ = store.Load()
	hy := p.Node(hyID)
	if hy == nil || hy.Rename != "my favourite" || hy.Config.Name != "🇺🇸 US Hysteria2 (new name)" || hy.Name() != "my favourite" {
		t.Fatalf("renamed node: %+v", hy)
	}
	if p.Node(vmID) != nil {
		t.Error("removed node still there")
	}
	if got := p.Groups[0].Members; !reflect.DeepEqual(got, []string{vlID, hyID}) {
		t.Errorf("group members %v", got)
	}
	if p.Selected != vlID || p.Subscriptions[0].LastError != "" || p.Subscriptions[0].Failures != 0 {
		t.Errorf("selected %q, sub %+v", p.Selected, p.Subscriptions[0])
	}
}

func TestRefresherSchedule(t *testing.T) {
	ts := newTestServer(t, uriList)
	store := newStore(t)
	addSub(t, store, "s1", ts.URL+"/a?token=SECRET")
	addSub(t, store, "s2", ts.URL+"/b?token=SECRET")
	store.Update(func(p *profile.Profile) error {
		for _, s := range p.Subscriptions {
			s.UserInterval = profile.Duration(150 * time.Millisecond)
		}
		return nil
	})
	var mu sync.Mutex
	var logs []string
	done := make(map[string]int)
	r := &Refresher{
		Store: store, Fetcher: ts.fetcher(), RetryBase: 50 * time.Millisecond, Poll: time.Second,
		Logf: func(format string, args ...any) {
			mu.Lock()
			logs = append(logs, fmt.Sprintf(format, args...))
			mu.Unlock()
		},
		OnRefresh: func(id string, res *Result, err error) {
			mu.Lock()
			done[id]++
			mu.Unlock()
		},
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err == nil {
		t.Error("second Start accepted")
	}
	// At 150 ms each subscription is refreshed again and again; wait for
	// three rounds (a loaded machine may take longer than 450 ms).
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		mu.Lock()
		enough := done["s1"] >= 3 && done["s2"] >= 3
		mu.Unlock()
		if enough {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("refreshes %v after 10 s, want at least 3 each at 150 ms", done)
		}
	}
	// Failures back off: the server breaks.
	ts.set(500, "text/plain", "down")
	hitsBefore := ts.hits.Load()
	time.Sleep(700 * time.Millisecond)
	stopStart := time.Now()
	r.Stop()
	r.Stop() // idempotent
	if d := time.Since(stopStart); d > 500*time.Millisecond {
		t.Errorf("Stop took %v", d)
	}
	hitsAfter := ts.hits.Load()
	time.Sleep(300 * time.Millisecond)
	if ts.hits.Load() != hitsAfter {
		t.Error("refreshes after Stop")
	}
	mu.Lock()
	defer mu.Unlock()
	// 700 ms of failures at 50, 100, 150 (capped by the interval) ms: about
	// 5 per subscription, fewer on a loaded machine, at least one each;
	// without back-off or with a tight loop it would be far more.
	if n := hitsAfter - hitsBefore; n < 2 || n > 24 {
		t.Errorf("%d requests during the outage", n)
	}
	p, _ := store.Load()
	for _, s := range p.Subscriptions {
		if len(p.Nodes) == 0 || s.LastError == "" || s.Failures == 0 {
			t.Errorf("sub %s: %d nodes, error %q, failures %d", s.ID, len(p.Nodes), s.LastError, s.Failures)
		}
	}
	for _, l := range logs {
		if strings.Contains(l, "SECRET") {
			t.Errorf("log leaks the token: %s", l)
		}
	}
}

func TestNextInterval(t *testing.T) {
	p := profile.New()
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	sub := &profile.Subscription{ID: "s", LastAttempt: now, UpdateInterval: profile.Duration(12 * time.Hour)}
	r := &Refresher{RetryBase: time.Minute}
	next := r.Next(p, sub)
	if d := next.Sub(now); d < 12*time.Hour || d > 13*time.Hour+12*time.Minute {
		t.Errorf("provider interval: %v", d)
	}
	if r.Next(p, sub) != next {
		t.Error("jitter not stable")
	}
	sub.UserInterval = profile.Duration(time.Hour)
	if d := r.Next(p, sub).Sub(now); d < time.Hour || d > 66*time.Minute {
		t.Errorf("user interval: %v", d)
	}
	sub.Failures = 3
	if d := r.Next(p, sub).Sub(now); d < 4*time.Minute || d > 5*time.Minute {
		t.Errorf("back-off after 3 failures: %v", d)
	}
	sub.Failures = 30
	if d := r.Next(p, sub).Sub(now); d < time.Hour || d > 66*time.Minute {
		t.Errorf("back-off capped by the interval: %v", d)
	}
	sub.UpdateInterval = profile.Duration(time.Second)
	sub.UserInterval, sub.Failures = 0, 0
	if d := r.Next(p, sub).Sub(now); d < MinProviderEvery {
		t.Errorf("provider interval not floored: %v", d)
	}
	if !r.Next(p, &profile.Subscription{}).IsZero() {
		t.Error("never-refreshed subscription not due")
	}
}

func TestNormalizeURL(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"ssconf://sub.example.com/s/abc", "https://sub.example.com/s/abc", true},
		{"clash://install-config?url=https%3A%2F%2Fsub.example.com%2Fapi%3Ftoken%3Dabc&name=x", "https://sub.example.com/api?token=abc", true},
		{"sing-box://import-remote-profile?url=https%3A%2F%2Fsub.example.com%2Fsb#Prov", "https://sub.example.com/sb", true},
		{" https://sub.example.com/x ", "https://sub.example.com/x", true},
		{"hy2://a@b.example.com", "hy2://a@b.example.com", false},
		{"/etc/passwd", "/etc/passwd", false},
	} {
		got, ok := NormalizeURL(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: %s %v, want %s %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
