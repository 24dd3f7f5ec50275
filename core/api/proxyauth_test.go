package api

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/proxy"

	"github.com/skiffvpn/skiff/core/plan"
	"github.com/skiffvpn/skiff/core/profile"
)

// TestProxyAuthThroughTheService turns proxy authentication on in the
// profile through the API and connects as the service would: the local
// proxy then refuses SOCKS5 and HTTP clients without the credentials or
// with wrong ones, lets them through with them, and system-proxy mode is
// refused with the reason.
func TestProxyAuthThroughTheService(t *testing.T) {
	l, c := pair(t)
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "hello") }))
	defer web.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Import(ctx, ImportRequest{Body: hy2Link}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []profile.Proxy{{Password: "pw"}, {Username: "a:b", Password: "pw"}, {Username: "a"}, {Username: "a", Password: "p\r\nX: y"}} {
		if err := Update(ctx, c, func(p *profile.Profile) error {
			p.Settings.Proxy = bad
			return nil
		}); !errors.Is(err, ErrBadRequest) || strings.Contains(err.Error(), "pw") {
			t.Errorf("proxy settings %q saved or badly refused: %v", bad.Username, err)
		}
	}
	if err := Update(ctx, c, func(p *profile.Profile) error {
		p.Routes.Final = "direct" // the web server is reached without a real server
		p.Settings.Proxy = profile.Proxy{Username: "alice", Password: "pa55"}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Connect(ctx, plan.Request{Mode: plan.ModeSystemProxy, Listen: "127.0.0.1:0"}); !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), "system-proxy mode cannot be used") {
		t.Errorf("system-proxy mode with auth on: %v, want bad_request with the reason", err)
	}
	if _, err := c.Connect(ctx, plan.Request{Listen: "127.0.0.1:0"}); err != nil {
		t.Fatal(err)
	}
	defer l.Disconnect(ctx)
	st, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	get := func(tr *http.Transport) (string, error) {
		resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(web.URL)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.Status + " " + string(b), nil
	}
	for _, tc := range []struct {
		name string
		user *url.Userinfo
		ok   bool
	}{
		{"right", url.UserPassword("alice", "pa55"), true},
		{"wrong password", url.UserPassword("alice", "pa56"), false},
		{"none", nil, false},
	} {
		var sauth *proxy.Auth
		if tc.user != nil {
			pw, _ := tc.user.Password()
			sauth = &proxy.Auth{User: tc.user.Username(), Password: pw}
		}
		d, _ := proxy.SOCKS5("tcp", st.Listen, sauth, &net.Dialer{})
		got, err := get(&http.Transport{DialContext: d.(proxy.ContextDialer).DialContext})
		if tc.ok != (err == nil && got == "200 OK hello") {
			t.Errorf("SOCKS5 %s: %q, %v", tc.name, got, err)
		}
		got, err = get(&http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: st.Listen, User: tc.user})})
		if tc.ok && got != "200 OK hello" || !tc.ok && !strings.HasPrefix(got, "407 ") {
			t.Errorf("HTTP %s: %q, %v", tc.name, got, err)
		}
	}
}
