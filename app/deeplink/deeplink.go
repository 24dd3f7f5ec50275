// Package deeplink reads the import links that subscription sites put
// behind their "import to client" buttons, which the desktop hands Skiff
// as an argument once the packages register it as the scheme's handler:
//
//	clash://install-config?url=<escaped URL>&name=<title>   (also clashmeta://)
//	sing-box://import-remote-profile?url=<escaped URL>#<title>
//
// A link names a subscription to add, nothing else: its URL must be http
// or https, and the window asks the user before it imports.
package deeplink

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Link is a subscription to import.
type Link struct {
	URL  string // the subscription, http or https
	Name string // the title the site gave it; may be ""
}

// ErrNotLink: the argument is not a deep link of a scheme Skiff handles.
var ErrNotLink = errors.New("deeplink: not an import link")

// maxLen bounds a link (a subscription URL with its token is far shorter).
const maxLen = 8 << 10

// Parse reads s. It returns ErrNotLink for an argument that is not a
// clash:// or sing-box:// link, and an error saying what is wrong for one
// that is but cannot be imported.
func Parse(s string) (Link, error) {
	scheme, _, ok := strings.Cut(s, "://")
	scheme = strings.ToLower(scheme)
	if !ok || scheme != "clash" && scheme != "clashmeta" && scheme != "sing-box" {
		return Link{}, ErrNotLink
	}
	if len(s) > maxLen {
		return Link{}, fmt.Errorf("deeplink: the link is %d bytes long, more than %d", len(s), maxLen)
	}
	u, err := url.Parse(s)
	if err != nil {
		return Link{}, fmt.Errorf("deeplink: %w", err)
	}
	want := "install-config"
	if scheme == "sing-box" {
		want = "import-remote-profile"
	}
	if u.Host != want || strings.Trim(u.Path, "/") != "" {
		return Link{}, fmt.Errorf("deeplink: %s://%s is not an import (want %s://%s?url=…)", scheme, u.Host+u.Path, scheme, want)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return Link{}, fmt.Errorf("deeplink: the link's query: %w", err)
	}
	raw := q.Get("url")
	if raw == "" {
		return Link{}, fmt.Errorf("deeplink: the link has no url=")
	}
	sub, err := url.Parse(raw)
	if err != nil {
		return Link{}, fmt.Errorf("deeplink: the subscription URL: %w", err)
	}
	if sub.Scheme != "http" && sub.Scheme != "https" || sub.Host == "" {
		return Link{}, fmt.Errorf("deeplink: the subscription URL %q is not http(s)", raw)
	}
	name := q.Get("name")
	if scheme == "sing-box" {
		name = u.Fragment
	}
	return Link{URL: sub.String(), Name: clean(name)}, nil
}

// clean drops control characters from a title and bounds it.
func clean(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == '\uFFFD' {
			return -1
		}
		return r
	}, s)
	if r := []rune(s); len(r) > 100 {
		s = string(r[:100])
	}
	return strings.TrimSpace(s)
}
