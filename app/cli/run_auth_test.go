package cli

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/proxy"

	"github.com/skiffvpn/skiff/core/plan"
	"github.com/skiffvpn/skiff/core/profile"
)

// waitListening waits for a run's ready line in stderr and returns the
// address it names; it fails t when the run exits first or after 10 s.
func waitListening(t *testing.T, stderr *syncBuffer, done <-chan int) string {
	t.Helper()
	ready := regexp.MustCompile(`skiff: listening on (127\.0\.0\.1:\d+)`)
	deadline := time.Now().Add(10 * time.Second)
	for !ready.MatchString(stderr.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("no ready line; stderr:\n%s", stderr.String())
		}
		select {
		case code := <-done:
			t.Fatalf("exited %d early; stderr:\n%s", code, stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	return ready.FindStringSubmatch(stderr.String())[1]
}

// authProfile is a profile dir with one saved node, every flow direct,
// and proxy credentials on.
func authProfile(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	var out, errb strings.Builder
	if code := Main([]string{"import", "--config-dir", dir, "hysteria2://secret@127.0.0.1:8443?sni=localhost#saved-one"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("import: exit %d: %s", code, errb.String())
	}
	store, err := profile.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Update(func(p *profile.Profile) error {
		p.Routes.Final = "direct"
		p.Settings.Proxy = profile.Proxy{Username: "alice", Password: "topsecret"}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestRunFlagsProxyAuth(t *testing.T) {
	dir := authProfile(t)
	var errb strings.Builder
	for _, args := range [][]string{
		{"--config-dir", dir, "--node", "saved-one"},
		{"--config-dir", dir, "--link", goodLink},
	} {
		rf, err := parseRunFlags(args, &errb)
		if err != nil {
			t.Fatal(err)
		}
		if rf.auth == nil || rf.auth.Username != "alice" || rf.auth.Password != "topsecret" {
			t.Errorf("%v: auth %+v, want the profile's", args, rf.auth)
		}
		if _, err := parseRunFlags(append(args, "--system-proxy"), &errb); !errors.Is(err, plan.ErrSystemProxyAuth) {
			t.Errorf("%v --system-proxy with auth on: %v, want ErrSystemProxyAuth", args, err)
		}
	}
}

// TestRunProxyAuth runs `skiff run` with the profile's credentials on:
// SOCKS5 clients without them or with a wrong password are refused, with
// them they get through, and the password is never logged.
func TestRunProxyAuth(t *testing.T) {
	dir := authProfile(t)
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "hello") }))
	defer web.Close()
	var stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- runCmd([]string{"--config-dir", dir, "--node", "saved-one", "--listen", "127.0.0.1:0", "--log-level", "debug"}, nil, io.Discard, &stderr)
	}()
	addr := waitListening(t, &stderr, done)
	for _, tc := range []struct {
		auth *proxy.Auth
		ok   bool
	}{
		{&proxy.Auth{User: "alice", Password: "topsecret"}, true},
		{&proxy.Auth{User: "alice", Password: "topsecreT"}, false},
		{nil, false},
	} {
		d, _ := proxy.SOCKS5("tcp", addr, tc.auth, &net.Dialer{})
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.(proxy.ContextDialer).DialContext}}
		resp, err := c.Get(web.URL)
		if err == nil {
			resp.Body.Close()
		}
		if (err == nil) != tc.ok {
			t.Errorf("SOCKS5 with %+v: %v, want ok=%v", tc.auth, err, tc.ok)
		}
	}
	self, _ := os.FindProcess(os.Getpid())
	if err := self.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("did not stop after SIGTERM")
	}
	if out := stderr.String(); strings.Contains(out, "topsecret") {
		t.Errorf("the password is in the log:\n%s", out)
	}
}
