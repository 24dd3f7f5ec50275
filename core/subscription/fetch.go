package subscription

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/internal/fetchguard"
)

// Fetch limits.
const (
	FetchTimeout = 30 * time.Second // whole request, body included
	MaxRedirects = 10
)

// UserAgent returns the User-Agent Skiff sends. Provider panels choose the
// format by it: "clash.meta" and "mihomo" get the Clash Meta YAML that
// includes hysteria2, vless, tuic and anytls (a bare "clash" gets the old
// Clash subset), "sing-box" gets sing-box JSON. Skiff reads all of them.
func UserAgent(version string) string {
	if version == "" {
		version = "dev"
	}
	return "Skiff/" + version + " (clash.meta; mihomo; sing-box compatible)"
}

// Fetcher downloads subscriptions. The zero value is ready to use.
type Fetcher struct {
	// Client makes the requests; nil means NewHTTPClient(nil). Its
	// CheckRedirect should bound redirects as NewHTTPClient's does.
	Client *http.Client
	// UserAgent; empty means UserAgent("").
	UserAgent string
	// MaxBytes bounds the body; 0 means MaxBodySize.
	MaxBytes int64
}

// NewHTTPClient returns the client Fetcher uses by default: certificate
// verification on (with roots from tlsConfig when given), FetchTimeout for
// the whole exchange, at most MaxRedirects redirects and none from https
// to http; connections only where fetchguard allows.
func NewHTTPClient(tlsConfig *tls.Config) *http.Client {
	tr := &http.Transport{
		Proxy: nil, // Skiff may itself be the system proxy: go direct
		// Where a fetch may connect: see fetchguard (Fetch marks the
		// URL's host as the one the user typed).
		DialContext:           fetchguard.Dial((&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext, nil),
		TLSClientConfig:       tlsConfig,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 20 * time.Second,
		MaxIdleConns:          4,
		IdleConnTimeout:       30 * time.Second,
		ForceAttemptHTTP2:     true,
	}
	return &http.Client{
		Transport:     tr,
		Timeout:       FetchTimeout,
		CheckRedirect: checkRedirect,
	}
}

func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= MaxRedirects {
		return fmt.Errorf("more than %d redirects", MaxRedirects)
	}
	if via[0].URL.Scheme == "https" && req.URL.Scheme != "https" {
		return errors.New("redirect from https to plain http refused")
	}
	return nil
}

// Info is what a provider's response headers say about the subscription.
type Info struct {
	UserInfo       *profile.UserInfo // subscription-userinfo
	UpdateInterval time.Duration     // profile-update-interval (hours)
	Title          string            // profile-title, else Content-Disposition's file name
	WebPageURL     string            // profile-web-page-url
}

// Fetched is a downloaded subscription.
type Fetched struct {
	Body []byte
	Info Info
}

// Fetch downloads rawURL (http or https). Errors name the URL only as
// Redact shows it.
func (f *Fetcher) Fetch(ctx context.Context, rawURL string) (*Fetched, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("subscription %s: not an http(s) URL", Redact(rawURL))
	}
	where := Redact(rawURL)
	client := f.Client
	if client == nil {
		client = NewHTTPClient(nil)
	}
	limit := f.MaxBytes
	if limit <= 0 {
		limit = MaxBodySize
	}
	ua := f.UserAgent
	if ua == "" {
		ua = UserAgent("")
	}
	req, err := http.NewRequestWithContext(fetchguard.Typed(ctx, u.String()), http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("subscription %s: %w", where, err)
	}
	req.Header.Set("User-Agent", ua)
	req.Header.Set("Accept", "*/*")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("subscription %s: %w", where, unwrapURLError(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("subscription %s: the server answered %s", where, resp.Status)
	}
	if resp.ContentLength > limit {
		return nil, fmt.Errorf("subscription %s: %w (the server announced %d bytes)", where, ErrTooLarge, resp.ContentLength)
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(resp.Body, limit+1)); err != nil {
		return nil, fmt.Errorf("subscription %s: reading the body: %w", where, unwrapURLError(err))
	}
	if int64(buf.Len()) > limit {
		return nil, fmt.Errorf("subscription %s: %w", where, ErrTooLarge)
	}
	body := buf.Bytes()
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct == "text/html" || ct == "application/xhtml+xml" {
		if t := bytes.TrimSpace(bytes.TrimPrefix(body, bom)); len(t) == 0 || t[0] == '<' {
			return nil, fmt.Errorf("subscription %s: %w", where, ErrHTML)
		}
	}
	return &Fetched{Body: body, Info: ParseHeaders(resp.Header)}, nil
}

// unwrapURLError drops *url.Error's copy of the URL, which carries the
// user's token.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		if ue.Timeout() {
			return fmt.Errorf("timed out: %w", ue.Err)
		}
		return ue.Err
	}
	return err
}

// Redact returns rawURL with only its scheme and host, for logs and errors:
// a subscription URL's path or query is the user's token.
func Redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return "(invalid URL)"
	}
	s := u.Scheme + "://" + u.Host
	if u.Path != "" && u.Path != "/" || u.RawQuery != "" {
		s += "/…"
	}
	return s
}

// ParseHeaders reads the subscription headers providers send. Malformed
// values are ignored.
func ParseHeaders(h http.Header) Info {
	var info Info
	if v := h.Get("Subscription-Userinfo"); v != "" {
		if ui, err := ParseUserInfo(v); err == nil {
			info.UserInfo = ui
		}
	}
	if v := strings.TrimSpace(h.Get("Profile-Update-Interval")); v != "" {
		if hours, err := strconv.ParseFloat(v, 64); err == nil && hours > 0 && hours <= 24*365 {
			info.UpdateInterval = time.Duration(hours * float64(time.Hour))
		}
	}
	info.Title = decodeTitle(h.Get("Profile-Title"))
	if info.Title == "" {
		if _, params, err := mime.ParseMediaType(h.Get("Content-Disposition")); err == nil {
			info.Title = strings.TrimSpace(params["filename"])
		}
	}
	if v := strings.TrimSpace(h.Get("Profile-Web-Page-Url")); v != "" {
		if u, err := url.Parse(v); err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" {
			info.WebPageURL = v
		}
	}
	return info
}

// decodeTitle reads profile-title, which some panels send as "base64:…".
func decodeTitle(v string) string {
	v = strings.TrimSpace(v)
	if rest, ok := strings.CutPrefix(v, "base64:"); ok {
		b, err := decodeBase64([]byte(rest))
		if err != nil || !utf8.Valid(b) {
			return ""
		}
		v = strings.TrimSpace(string(b))
	}
	if !utf8.ValidString(v) || len(v) > 256 {
		return ""
	}
	return v
}

// ParseUserInfo reads a subscription-userinfo header:
// "upload=N; download=N; total=N; expire=UNIX". Fields may come in any
// order and any may be missing; unknown fields are ignored. An expire of 0
// means none.
func ParseUserInfo(v string) (*profile.UserInfo, error) {
	ui := &profile.UserInfo{}
	found := false
	for part := range strings.SplitSeq(v, ";") {
		k, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			continue
		}
		k = strings.ToLower(strings.TrimSpace(k))
		val = strings.TrimSpace(val)
		var dst *int64
		switch k {
		case "upload":
			dst = &ui.Upload
		case "download":
			dst = &ui.Download
		case "total":
			dst = &ui.Total
		case "expire":
		default:
			continue
		}
		// Some panels send floats ("1.2e10") or empty values.
		f, err := strconv.ParseFloat(val, 64)
		if err != nil || f < 0 || f > 1<<62 {
			return nil, fmt.Errorf("subscription-userinfo: %s: not a non-negative number", k)
		}
		found = true
		if dst != nil {
			*dst = int64(f)
		} else if f > 0 {
			ui.Expire = time.Unix(int64(f), 0).UTC()
		}
	}
	if !found {
		return nil, errors.New("subscription-userinfo: no upload, download, total or expire field")
	}
	return ui, nil
}

// NormalizeURL turns the one-click import links that providers' pages offer
// into the subscription URL they carry: ssconf:// (SIP008) becomes https://,
// clash://install-config?url=… and sing-box://import-remote-profile?url=…
// give their url parameter. Other input is returned unchanged; ok reports
// whether the result is an http(s) URL.
func NormalizeURL(s string) (string, bool) {
	s = strings.TrimSpace(s)
	lower := strings.ToLower(s)
	switch {
	case strings.HasPrefix(lower, "ssconf://"):
		s = "https://" + s[len("ssconf://"):]
	case strings.HasPrefix(lower, "clash://install-config"), strings.HasPrefix(lower, "clashmeta://install-config"),
		strings.HasPrefix(lower, "sing-box://import-remote-profile"):
		if u, err := url.Parse(s); err == nil {
			if inner := u.Query().Get("url"); inner != "" {
				s = inner
			}
		}
	}
	u, err := url.Parse(s)
	return s, err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != ""
}
