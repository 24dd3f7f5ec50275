package mixed

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/proxy"

	"github.com/skiffvpn/skiff/core/flow"
)

// directHandler dials each stream's destination itself and relays: the
// real inbound in front of real servers, with nothing between.
type directHandler struct{}

func (directHandler) HandleStream(ctx context.Context, m flow.Metadata, accept func() (net.Conn, error)) error {
	up, err := (&net.Dialer{}).DialContext(ctx, "tcp", m.Destination.String())
	if err != nil {
		return err
	}
	defer up.Close()
	c, err := accept()
	if err != nil {
		return err
	}
	defer c.Close()
	done := make(chan struct{})
	go func() {
		io.Copy(up, c)
		up.(*net.TCPConn).CloseWrite()
		close(done)
	}()
	io.Copy(c, up)
	c.Close()
	<-done
	return nil
}

func (directHandler) HandlePacket(_ context.Context, _ flow.Metadata, conn net.PacketConn) error {
	return conn.Close()
}

var testAuth = &Auth{Username: "alice", Password: "s3cret:with colon"}

// authServers starts the inbound with testAuth and a plain and a TLS web
// server behind it.
func authServers(t *testing.T) (proxyAddr string, plain, secure *httptest.Server) {
	t.Helper()
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Proxy-Authorization") != "" {
			t.Errorf("the proxy passed Proxy-Authorization on to %s", r.Host)
		}
		io.WriteString(w, "hello")
	})
	plain, secure = httptest.NewServer(hello), httptest.NewTLSServer(hello)
	t.Cleanup(plain.Close)
	t.Cleanup(secure.Close)
	s, err := Listen(Config{Listen: "127.0.0.1:0", Auth: testAuth, Logger: slog.New(slog.DiscardHandler)}, directHandler{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.Addr().String(), plain, secure
}

func TestAuthSOCKS5(t *testing.T) {
	addr, plain, _ := authServers(t)
	target := strings.TrimPrefix(plain.URL, "http://")
	for _, tc := range []struct {
		name string
		auth *proxy.Auth
		ok   bool
	}{
		{"right", &proxy.Auth{User: testAuth.Username, Password: testAuth.Password}, true},
		{"wrong password", &proxy.Auth{User: testAuth.Username, Password: "s3cret"}, false},
		{"wrong user", &proxy.Auth{User: "bob", Password: testAuth.Password}, false},
		{"none", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := proxy.SOCKS5("tcp", addr, tc.auth, &net.Dialer{Timeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
				DialContext: d.(proxy.ContextDialer).DialContext,
			}}
			resp, err := c.Get("http://" + target + "/")
			if !tc.ok {
				if err == nil {
					resp.Body.Close()
					t.Fatal("the proxy let a client through without the right credentials")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(body) != "hello" {
				t.Errorf("body %q", body)
			}
		})
	}
}

func TestAuthHTTP(t *testing.T) {
	addr, plain, secure := authServers(t)
	pool := secure.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	for _, tc := range []struct {
		name string
		user *url.Userinfo
		ok   bool
	}{
		{"right", url.UserPassword(testAuth.Username, testAuth.Password), true},
		{"wrong password", url.UserPassword(testAuth.Username, "nope"), false},
		{"no password", url.User(testAuth.Username), false},
		{"none", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pu := &url.URL{Scheme: "http", Host: addr, User: tc.user}
			c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
				Proxy:           http.ProxyURL(pu),
				TLSClientConfig: &tls.Config{RootCAs: pool},
			}}
			// A plain request is forwarded; an https one is a CONNECT.
			resp, err := c.Get(plain.URL + "/")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if tc.ok != (resp.StatusCode == http.StatusOK && string(body) == "hello") {
				t.Fatalf("plain: %s %q", resp.Status, body)
			}
			if !tc.ok {
				if resp.StatusCode != http.StatusProxyAuthRequired || !strings.HasPrefix(resp.Header.Get("Proxy-Authenticate"), "Basic ") {
					t.Errorf("plain: %s, Proxy-Authenticate %q", resp.Status, resp.Header.Get("Proxy-Authenticate"))
				}
			}
			resp, err = c.Get(secure.URL + "/")
			if tc.ok {
				if err != nil {
					t.Fatalf("CONNECT: %v", err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if string(body) != "hello" {
					t.Errorf("CONNECT: body %q", body)
				}
			} else if err == nil || !strings.Contains(err.Error(), "Proxy Authentication Required") {
				if err == nil {
					resp.Body.Close()
				}
				t.Errorf("CONNECT without the right credentials: %v", err)
			}
		})
	}
}

// TestAuthEveryRequest: a keep-alive connection that authenticated once
// must still give the credentials with its next request.
func TestAuthEveryRequest(t *testing.T) {
	addr, plain, _ := authServers(t)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	cred := base64.StdEncoding.EncodeToString([]byte(testAuth.Username + ":" + testAuth.Password))
	br := bufio.NewReader(c)
	for i, hdr := range []string{"Proxy-Authorization: Basic " + cred + "\r\n", ""} {
		io.WriteString(c, "GET "+plain.URL+"/ HTTP/1.1\r\nHost: x\r\n"+hdr+"\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i+1, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if want := []int{200, 407}[i]; resp.StatusCode != want {
			t.Errorf("request %d: %s, want %d", i+1, resp.Status, want)
		}
	}
}

func TestAuthValidate(t *testing.T) {
	for _, tc := range []struct {
		a  Auth
		ok bool
	}{
		{Auth{"u", "p"}, true},
		{Auth{"ユーザー", "p:a:ss"}, true},
		{Auth{"", "p"}, false},
		{Auth{"u", ""}, false},
		{Auth{"u:v", "p"}, false},
		{Auth{strings.Repeat("u", 256), "p"}, false},
		{Auth{"u", strings.Repeat("p", 256)}, false},
		{Auth{"u\r\nX: y", "p"}, false},
	} {
		if err := tc.a.Validate(); (err == nil) != tc.ok {
			t.Errorf("%q: %v, want ok=%v", tc.a.Username, err, tc.ok)
		}
	}
	_, err := Listen(Config{Listen: "127.0.0.1:0", Auth: &Auth{Username: "u", Password: "pw\n"}}, directHandler{})
	if err == nil || strings.Contains(err.Error(), "pw") {
		t.Errorf("Listen with a bad password: %v", err)
	}
}

// FuzzServeAuth runs arbitrary clients against an inbound that asks for
// credentials: nothing is handed on unless the script holds them.
func FuzzServeAuth(f *testing.F) {
	cred := base64.StdEncoding.EncodeToString([]byte(testAuth.Username + ":" + testAuth.Password))
	userPass := append(append([]byte{userPassVer, byte(len(testAuth.Username))}, testAuth.Username...), byte(len(testAuth.Password)))
	userPass = append(userPass, testAuth.Password...)
	connect := appendSOCKSAddr([]byte{socksVersion, cmdConnect, 0}, flow.Addr{Name: "example.com", Port: 443})
	for _, seed := range [][]byte{
		append(append([]byte{socksVersion, 1, methodUserPass}, userPass...), connect...),
		append(append([]byte{socksVersion, 2, methodNoAuth, methodUserPass}, "\x01\x05alice\x01x"...), connect...),
		append([]byte{socksVersion, 1, methodNoAuth}, connect...),
		[]byte("CONNECT example.com:443 HTTP/1.1\r\nProxy-Authorization: Basic " + cred + "\r\n\r\nbytes"),
		[]byte("CONNECT example.com:443 HTTP/1.1\r\nProxy-Authorization: basic " + cred[:8] + "\r\n\r\n"),
		[]byte("GET http://example.com/ HTTP/1.1\r\nProxy-Authorization: Basic " + cred + "\r\n\r\nGET http://example.com/ HTTP/1.1\r\n\r\n"),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, script []byte) {
		_, h := serveScriptWith(t, script, testAuth)
		if len(h.dsts) > 0 && !bytes.Contains(script, userPass) && !bytes.Contains(script, []byte(cred)) {
			t.Fatalf("%d flows handed on without the credentials: %q", len(h.dsts), script)
		}
	})
}

// FuzzReadUserPass: the RFC 1929 request parser never panics, never reads
// past the request, and what it accepts encodes back to the bytes it read.
func FuzzReadUserPass(f *testing.F) {
	f.Add([]byte("\x01\x05alice\x06secret"))
	f.Add([]byte("\x01\x00\x00"))
	f.Add([]byte("\x02\x01u\x01p"))
	f.Add([]byte("\x01\xffu"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		user, pass, err := readUserPass(r)
		if err != nil {
			return
		}
		read := b[:len(b)-r.Len()]
		want := append(append(append([]byte{userPassVer, byte(len(user))}, user...), byte(len(pass))), pass...)
		if user == "" || pass == "" || !bytes.Equal(read, want) {
			t.Fatalf("read %x as %q %q", read, user, pass)
		}
	})
}
