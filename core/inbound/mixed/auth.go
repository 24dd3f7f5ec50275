package mixed

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Auth is what the proxy asks of every client when it is set: a SOCKS5
// client the username/password method (RFC 1929), an HTTP client Basic
// credentials in Proxy-Authorization (RFC 9110 11.7.1).
//
// It guards the proxy against other local users and programs, not the
// network: the credentials cross loopback in the clear. A SOCKS5 UDP
// association is as safe as its TCP connection's client address, as
// RFC 1929 leaves it (see socksUDP).
type Auth struct {
	Username string
	Password string // a secret: never logged, never in an error
}

// Validate checks that a's fields fit both protocols: 1 to 255 bytes each
// (RFC 1929's length bytes), no control characters (a header could not
// carry them), and no ':' in the username (Basic splits at the first).
func (a *Auth) Validate() error {
	for _, f := range []struct{ name, v string }{{"username", a.Username}, {"password", a.Password}} {
		if f.v == "" || len(f.v) > 255 {
			return fmt.Errorf("proxy %s: want 1 to 255 bytes", f.name)
		}
		if strings.ContainsFunc(f.v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return fmt.Errorf("proxy %s: holds a control character", f.name)
		}
	}
	if strings.Contains(a.Username, ":") {
		return errors.New("proxy username: holds ':', which HTTP Basic cannot carry")
	}
	return nil
}

// authCheck compares offered credentials with the configured ones in
// time that depends on neither: both sides are hashed first, so not even
// the length of the password leaks.
type authCheck struct{ user, pass [sha256.Size]byte }

func newAuthCheck(a *Auth) *authCheck {
	if a == nil {
		return nil
	}
	return &authCheck{sha256.Sum256([]byte(a.Username)), sha256.Sum256([]byte(a.Password))}
}

func (c *authCheck) match(user, pass string) bool {
	u, p := sha256.Sum256([]byte(user)), sha256.Sum256([]byte(pass))
	return subtle.ConstantTimeCompare(u[:], c.user[:])&subtle.ConstantTimeCompare(p[:], c.pass[:]) == 1
}

// RFC 1929 sub-negotiation.
const (
	methodUserPass = 0x02
	userPassVer    = 0x01
	userPassOK     = 0x00
	userPassFailed = 0x01
)

var errUserPass = errors.New("malformed username/password request")

// readUserPass reads an RFC 1929 request: VER ULEN UNAME PLEN PASSWD.
func readUserPass(r io.Reader) (user, pass string, err error) {
	var b [1 + 1 + 255 + 1 + 255]byte
	if _, err := io.ReadFull(r, b[:2]); err != nil {
		return "", "", err
	}
	if b[0] != userPassVer || b[1] == 0 {
		return "", "", errUserPass
	}
	ulen := int(b[1])
	if _, err := io.ReadFull(r, b[2:2+ulen+1]); err != nil {
		return "", "", err
	}
	plen := int(b[2+ulen])
	if plen == 0 {
		return "", "", errUserPass
	}
	if _, err := io.ReadFull(r, b[3+ulen:3+ulen+plen]); err != nil {
		return "", "", err
	}
	return string(b[2 : 2+ulen]), string(b[3+ulen : 3+ulen+plen]), nil
}

// proxyBasic returns the Basic credentials of h's Proxy-Authorization.
func proxyBasic(h http.Header) (user, pass string, ok bool) {
	v := h.Get("Proxy-Authorization")
	scheme, cred, found := strings.Cut(v, " ")
	if !found || !strings.EqualFold(scheme, "Basic") {
		return "", "", false
	}
	dec, err := base64.StdEncoding.Strict().DecodeString(strings.TrimSpace(cred)) // one encoding per credential
	if err != nil {
		return "", "", false
	}
	return strings.Cut(string(dec), ":")
}

// writeProxyAuthRequired answers 407 and asks for Basic credentials.
func writeProxyAuthRequired(w io.Writer) {
	const body = "skiff: this proxy needs a username and password\n"
	io.WriteString(w, "HTTP/1.1 407 Proxy Authentication Required\r\n"+
		"Proxy-Authenticate: Basic realm=\"skiff\", charset=\"UTF-8\"\r\n"+
		"Content-Type: text/plain; charset=utf-8\r\n"+
		"Connection: close\r\n"+
		fmt.Sprintf("Content-Length: %d\r\n\r\n", len(body))+body)
}
