package core

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/rule"
	"github.com/skiffvpn/skiff/core/ruleset"
)

// listServer serves a rule set whose body and status the test changes.
type listServer struct {
	mu     sync.Mutex
	status int
	body   string
	cut    bool  // announce a longer body than is sent
	huge   int64 // send this many bytes (chunked, no length) instead of body
	hits   int
}

func (s *listServer) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	status, body, cut, huge := s.status, s.body, s.cut, s.huge
	s.hits++
	s.mu.Unlock()
	if huge > 0 {
		w.WriteHeader(http.StatusOK)
		buf := make([]byte, 1<<20)
		for sent := int64(0); sent < huge; sent += int64(len(buf)) {
			if _, err := w.Write(buf); err != nil {
				return
			}
		}
		return
	}
	if cut {
		w.Header().Set("Content-Length", "100000")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, body)
		return
	}
	w.WriteHeader(status)
	io.WriteString(w, body)
}

func (s *listServer) serve(status int, body string, cut bool) {
	s.mu.Lock()
	s.status, s.body, s.cut, s.huge = status, body, cut, 0
	s.mu.Unlock()
}

func routeOf(t *testing.T, c *Controller, name string) string {
	t.Helper()
	r := c.current()
	if r == nil {
		t.Fatal("not running")
	}
	m := flow.Metadata{Network: flow.TCP, Destination: flow.Addr{Name: name, Port: 443}}
	_, target, err := r.routing.router.Route(&m)
	if err != nil {
		t.Fatal(err)
	}
	return target
}

// waitState waits until the state of the run's only rule set satisfies ok.
func waitState(t *testing.T, c *Controller, what string, ok func(RuleSetState) bool) RuleSetState {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		st := c.RuleSets()
		if len(st) == 1 && ok(st[0]) {
			return st[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: rule set state %+v", what, st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRuleSetRefresh runs the core with a rule set from a local HTTP
// server: loaded at Start, applied to routing and DNS, refreshed on its
// interval, kept through a failed, truncated and malformed download,
// and taken from the cache at the next Start while the server is down.
func TestRuleSetRefresh(t *testing.T) {
	ls := &listServer{}
	ls.serve(200, `{"version":3,"rules":[{"domain_suffix":["one.example"]}]}`, false)
	srv := httptest.NewServer(ls)
	defer srv.Close()
	cache := t.TempDir()
	cfg := Config{
		Listen:       "127.0.0.1:0",
		Rules:        []rule.Rule{{RuleSet: []string{"list"}, Target: TargetBlock}},
		Final:        TargetDirect,
		RuleSets:     []ruleset.Source{{Name: "list", URL: srv.URL + "/list.json", Format: ruleset.FormatSingBox, Interval: 300 * time.Millisecond}},
		RuleSetCache: cache,
	}
	c := NewController(Options{LogOutput: io.Discard})
	if err := c.Start(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if got := routeOf(t, c, "www.one.example"); got != TargetBlock {
		t.Fatalf("www.one.example: %s, want block", got)
	}
	if got := routeOf(t, c, "two.example"); got != TargetDirect {
		t.Fatalf("two.example: %s, want direct", got)
	}
	st := c.RuleSets()[0]
	if st.Source != "download" || st.Stats.Domains != 1 || st.Err != "" {
		t.Errorf("state after start: %+v", st)
	}

	// The next download brings another list.
	ls.serve(200, `{"version":3,"rules":[{"domain_suffix":["two.example"]}]}`, false)
	waitState(t, c, "refresh", func(s RuleSetState) bool { return s.Err == "" && routeOf(t, c, "two.example") == TargetBlock })
	if got := routeOf(t, c, "www.one.example"); got != TargetDirect {
		t.Errorf("www.one.example after the refresh: %s, want direct", got)
	}

	// Bad downloads keep the list and say why.
	for _, bad := range []struct {
		name   string
		status int
		body   string
		cut    bool
		want   string
	}{
		{"server error", 502, "", false, "502"},
		{"truncated", 200, `{"version":3,"rules":[{"domain_suffix":["three.example"]}`, true, "body"},
		{"malformed", 200, `{"version":3,"rules":[{"domain_suffix":`, false, "not a sing-box rule set"},
		{"srs garbage", 200, "SRS\x01\x78\x9c garbage", false, "not a sing-box rule set"},
		{"200 MB", 200, "", false, "not a rule set"},
	} {
		ls.serve(bad.status, bad.body, bad.cut)
		if bad.name == "200 MB" {
			ls.mu.Lock()
			ls.huge = 200 << 20
			ls.mu.Unlock()
		}
		t0 := time.Now()
		st := waitState(t, c, bad.name, func(s RuleSetState) bool { return s.Err != "" && s.Checked.After(t0) })
		if !strings.Contains(st.Err, bad.want) {
			t.Errorf("%s: error %q does not say %q", bad.name, st.Err, bad.want)
		}
		if strings.Contains(st.Err, "list.json") {
			t.Errorf("%s: error %q names the URL's path", bad.name, st.Err)
		}
		if got := routeOf(t, c, "two.example"); got != TargetBlock {
			t.Errorf("%s: two.example: %s, want block (the old list)", bad.name, got)
		}
	}
	c.Stop()

	// With the server gone, the next Start routes with the cached list.
	srv.Close()
	if err := c.Start(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	if st := c.RuleSets()[0]; st.Source != "cache" || st.Stats.Domains != 1 {
		t.Errorf("state after restart: %+v", st)
	}
	if got := routeOf(t, c, "two.example"); got != TargetBlock {
		t.Errorf("two.example from the cache: %s, want block", got)
	}
}

// TestRuleSetStartsWithoutList starts with a rule set that cannot be
// downloaded and has no cache: the core runs, the set matches nothing, the
// state says why, and a later download puts it in force.
func TestRuleSetStartsWithoutList(t *testing.T) {
	ls := &listServer{}
	ls.serve(404, "", false)
	srv := httptest.NewServer(ls)
	defer srv.Close()
	cfg := Config{
		Listen:   "127.0.0.1:0",
		Rules:    []rule.Rule{{RuleSet: []string{"list"}, Target: TargetBlock}},
		Final:    TargetDirect,
		RuleSets: []ruleset.Source{{Name: "list", URL: srv.URL + "/l.txt", Format: ruleset.FormatClashDomain}},
	}
	c := NewController(Options{LogOutput: io.Discard})
	if err := c.Start(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	st := c.RuleSets()[0]
	if !strings.Contains(st.Err, "404") || !st.Updated.IsZero() {
		t.Errorf("state: %+v", st)
	}
	if got := routeOf(t, c, "a.example"); got != TargetDirect {
		t.Errorf("a.example: %s, want direct", got)
	}
	ls.serve(200, "+.a.example\n", false)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	states, err := c.RefreshRuleSets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// It returns once the download was tried and the rules rebuilt.
	if len(states) != 1 || states[0].Err != "" || states[0].Updated.IsZero() {
		t.Errorf("states after the refresh: %+v", states)
	}
	if _, err := c.RefreshRuleSets(ctx, "nope"); !errors.Is(err, ErrNoRuleSet) {
		t.Errorf("an unknown set: %v, want ErrNoRuleSet", err)
	}
	if got := routeOf(t, c, "x.a.example"); got != TargetBlock {
		t.Errorf("x.a.example after the refresh: %s, want block", got)
	}
}

// TestRuleSetData is a set given as data (an imported file): decoded at
// Start, never downloaded; bad data fails the Start with the set's name.
func TestRuleSetData(t *testing.T) {
	cfg := Config{
		Listen:   "127.0.0.1:0",
		Rules:    []rule.Rule{{RuleSet: []string{"mine"}, Target: TargetBlock}},
		Final:    TargetDirect,
		RuleSets: []ruleset.Source{{Name: "mine", Data: []byte("DOMAIN-SUFFIX,mine.example\nPROCESS-NAME,curl\n"), Format: ruleset.FormatClashClassical}},
	}
	c := NewController(Options{LogOutput: io.Discard})
	if err := c.Start(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if got := routeOf(t, c, "a.mine.example"); got != TargetBlock {
		t.Errorf("a.mine.example: %s, want block", got)
	}
	if st := c.RuleSets()[0]; st.Source != "data" || st.Skipped != 1 {
		t.Errorf("state: %+v", st)
	}
	if _, err := c.RefreshRuleSets(context.Background(), "mine"); !errors.Is(err, ErrRuleSetNoURL) {
		t.Errorf("refresh of a data set: %v, want ErrRuleSetNoURL", err)
	}
	// Nothing to download: every set is data, so a refresh of all returns at once.
	if _, err := c.RefreshRuleSets(context.Background()); err != nil {
		t.Errorf("refresh of no downloaded set: %v", err)
	}
	c.Stop()
	if _, err := c.RefreshRuleSets(context.Background()); !errors.Is(err, ErrNoRuleSet) {
		t.Errorf("refresh while stopped: %v, want ErrNoRuleSet", err)
	}
	cfg.RuleSets[0].Data = []byte(`{"version":3,"rules":[{"domain":`)
	cfg.RuleSets[0].Format = ruleset.FormatSingBox
	err := c.Start(context.Background(), cfg)
	if err == nil {
		c.Stop()
		t.Fatal("Start with bad data: no error")
	}
	if !strings.Contains(err.Error(), "mine") {
		t.Errorf("error %q does not name the set", err)
	}
}

// TestRuleSetRefreshYAMLBomb: a Clash rule-provider list replaced by a
// YAML alias bomb keeps the list in use.
func TestRuleSetRefreshYAMLBomb(t *testing.T) {
	ls := &listServer{}
	ls.serve(200, "payload:\n  - DOMAIN-SUFFIX,one.example\n", false)
	srv := httptest.NewServer(ls)
	defer srv.Close()
	cfg := Config{
		Listen:       "127.0.0.1:0",
		Rules:        []rule.Rule{{RuleSet: []string{"p"}, Target: TargetBlock}},
		Final:        TargetDirect,
		RuleSets:     []ruleset.Source{{Name: "p", URL: srv.URL + "/p.yaml", Format: ruleset.FormatClashClassical, Interval: 300 * time.Millisecond}},
		RuleSetCache: t.TempDir(),
	}
	c := NewController(Options{LogOutput: io.Discard})
	if err := c.Start(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	var bomb strings.Builder
	bomb.WriteString("a: &a [\"DOMAIN,x.example\",\"DOMAIN,x.example\",\"DOMAIN,x.example\",\"DOMAIN,x.example\",\"DOMAIN,x.example\",\"DOMAIN,x.example\",\"DOMAIN,x.example\",\"DOMAIN,x.example\",\"DOMAIN,x.example\"]\n")
	prev := "a"
	for _, n := range []string{"b", "c", "d", "e", "f", "g", "h", "i"} {
		fmt.Fprintf(&bomb, "%s: &%s [*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s]\n", n, n, prev, prev, prev, prev, prev, prev, prev, prev, prev)
		prev = n
	}
	bomb.WriteString("payload: *i\n")
	ls.serve(200, bomb.String(), false)
	t0 := time.Now()
	st := waitState(t, c, "bomb", func(s RuleSetState) bool { return s.Err != "" && s.Checked.After(t0) })
	t.Logf("bomb refused: %s", st.Err)
	if len(st.Err) > 400 {
		t.Errorf("the error is %d bytes long", len(st.Err))
	}
	if got := routeOf(t, c, "www.one.example"); got != TargetBlock {
		t.Errorf("www.one.example after the bomb: %s, want block (the old list)", got)
	}
}

// TestRuleSetFetchGuard: a direct rule-set download may reach the loopback
// host the user typed, but not a loopback URL a subscription provided,
// nor loopback through a redirect from another host (the typed host here
// is "localhost", its redirect names 127.0.0.1).
func TestRuleSetFetchGuard(t *testing.T) {
	ls := &listServer{}
	ls.serve(200, "+.a.example\n", false)
	srv := httptest.NewServer(ls)
	defer srv.Close()
	redir := httptest.NewServer(http.RedirectHandler(srv.URL+"/admin", http.StatusFound))
	defer redir.Close()
	src := func(name, url string, provided bool) ruleset.Source {
		return ruleset.Source{Name: name, URL: url, Format: ruleset.FormatClashDomain, Provided: provided}
	}
	cfg := Config{
		Listen: "127.0.0.1:0",
		Final:  TargetDirect,
		RuleSets: []ruleset.Source{
			src("mine", srv.URL+"/mine.txt", false),
			src("theirs", srv.URL+"/theirs.txt", true),
			src("redirected", strings.Replace(redir.URL, "127.0.0.1", "localhost", 1)+"/r.txt", false),
		},
	}
	c := NewController(Options{LogOutput: io.Discard})
	if err := c.Start(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	st := c.RuleSets()
	if len(st) != 3 || st[0].Err != "" || st[0].Stats.Domains != 1 {
		t.Fatalf("the typed loopback set did not load: %+v", st)
	}
	for _, s := range st[1:] {
		if !strings.Contains(s.Err, "loopback") || !s.Updated.IsZero() {
			t.Errorf("set %s: %+v, want refused as loopback", s.Name, s)
		}
	}
	ls.mu.Lock()
	hits := ls.hits
	ls.mu.Unlock()
	if hits != 1 {
		t.Errorf("the list server was asked %d times, want once (the typed set)", hits)
	}
}
