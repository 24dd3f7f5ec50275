package ruleset

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/skiffvpn/skiff/internal/atomicfile"
)

// Formats of a rule-set file.
const (
	FormatSingBox        = "sing-box"        // source JSON
	FormatClashDomain    = "clash-domain"    // rule-provider, behavior domain
	FormatClashIPCIDR    = "clash-ipcidr"    // rule-provider, behavior ipcidr
	FormatClashClassical = "clash-classical" // rule-provider, behavior classical
)

// Parse decodes data in the given format.
func Parse(format string, data []byte) (*Set, error) {
	switch format {
	case FormatSingBox:
		return ParseSingBox(data)
	case FormatClashDomain:
		return ParseClash(BehaviorDomain, data)
	case FormatClashIPCIDR:
		return ParseClash(BehaviorIPCIDR, data)
	case FormatClashClassical:
		return ParseClash(BehaviorClassical, data)
	}
	if countries, ok := strings.CutPrefix(format, FormatGeoIP); ok {
		return ParseGeoIP(data, strings.Split(countries, ",")...)
	}
	if lists, ok := strings.CutPrefix(format, FormatGeoSite); ok {
		return ParseGeoSite(data, strings.Split(lists, ",")...)
	}
	return nil, CheckFormat(format)
}

// CheckFormat reports whether format is one that Parse reads.
func CheckFormat(format string) error {
	switch format {
	case FormatSingBox, FormatClashDomain, FormatClashIPCIDR, FormatClashClassical:
		return nil
	}
	for _, prefix := range []string{FormatGeoIP, FormatGeoSite} {
		if rest, ok := strings.CutPrefix(format, prefix); ok {
			for _, part := range strings.Split(rest, ",") {
				if strings.TrimSpace(part) == "" {
					return fmt.Errorf("ruleset: format %q: an empty list name", format)
				}
			}
			return nil
		}
	}
	return fmt.Errorf("ruleset: format %q is not %s, %s, %s, %s, %sCOUNTRY or %sLIST", format, FormatSingBox, FormatClashDomain, FormatClashIPCIDR, FormatClashClassical, FormatGeoIP, FormatGeoSite)
}

// DefaultInterval is how long a downloaded rule set is used before it is
// fetched again; public lists change about daily.
const DefaultInterval = 24 * time.Hour

// Source is a rule set kept up to date from a URL, or one given as data
// (a file the user imported: the core never reads a path a client names).
type Source struct {
	Name     string        // what rules call it
	URL      string        // http or https; "" when Data holds the rule set
	Data     []byte        // the rule set itself, for a Source without a URL
	Format   string        // one of the Format constants
	Interval time.Duration // 0: DefaultInterval
	// Provided says the URL is a subscription's, not the user's: it
	// may not name a loopback or private host (see fetchguard).
	Provided bool
}

func (s *Source) interval() time.Duration {
	if s.Interval <= 0 {
		return DefaultInterval
	}
	return s.Interval
}

// FetchFunc downloads url's body. Skiff's is direct first and through the
// proxy when direct fails (see FirstOf).
type FetchFunc func(ctx context.Context, url string) ([]byte, error)

// FirstOf returns a FetchFunc that tries each of fetch in turn and returns
// the first body, or all of their errors.
func FirstOf(fetch ...FetchFunc) FetchFunc {
	return func(ctx context.Context, url string) ([]byte, error) {
		var errs []error
		for _, f := range fetch {
			b, err := f(ctx, url)
			if err == nil {
				return b, nil
			}
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
		}
		return nil, errors.Join(errs...)
	}
}

// HTTPFetch returns a FetchFunc over client: status 200 only, a body of at
// most MaxSize bytes, and a body cut short (the connection closed before
// its length, or a chunked body without its end) is an error, not a list.
func HTTPFetch(client *http.Client) FetchFunc {
	return func(ctx context.Context, url string) ([]byte, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, err
		}
		resp, err := client.Do(req)
		if err != nil {
			// A *url.Error names the whole URL, which may carry a
			// provider's token: name only the host.
			var ue *neturl.Error
			if errors.As(err, &ue) {
				return nil, fmt.Errorf("%s %s: %w", ue.Op, req.URL.Host, ue.Err)
			}
			return nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("status %s", resp.Status)
		}
		if resp.ContentLength > MaxSize {
			return nil, fmt.Errorf("%d bytes is more than a rule set can be (%d)", resp.ContentLength, MaxSize)
		}
		b, err := io.ReadAll(io.LimitReader(resp.Body, MaxSize+1))
		if err != nil {
			return nil, fmt.Errorf("reading the body: %w", err)
		}
		if len(b) > MaxSize {
			return nil, fmt.Errorf("more than %d bytes: not a rule set", MaxSize)
		}
		return b, nil
	}
}

// Cache keeps downloaded rule sets in Dir, one file each, named by a hash
// of the URL (never by anything a subscription or a user wrote), written
// atomically. A download that does not decode never replaces the file. An
// empty Dir keeps nothing: every Get downloads.
type Cache struct {
	Dir   string
	Fetch FetchFunc
}

func (c *Cache) path(src *Source) string {
	h := sha256.Sum256([]byte(src.Format + "\x00" + src.URL))
	return filepath.Join(c.Dir, "ruleset-"+hex.EncodeToString(h[:12])+".cache")
}

// Load returns src's rule set from the cache and when it was saved.
func (c *Cache) Load(src Source) (*Set, time.Time, error) {
	if c.Dir == "" {
		return nil, time.Time{}, fmt.Errorf("ruleset %s: no cache", src.Name)
	}
	p := c.path(&src)
	fi, err := os.Stat(p)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("ruleset %s: cache: %w", src.Name, err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("ruleset %s: cache: %w", src.Name, err)
	}
	s, err := Parse(src.Format, b)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("ruleset %s: cache: %w", src.Name, err)
	}
	return s, fi.ModTime(), nil
}

// Update downloads src, decodes it and, only when that succeeds, saves it.
// On any error the cached copy stays as it was.
func (c *Cache) Update(ctx context.Context, src Source) (*Set, error) {
	if c.Fetch == nil {
		return nil, fmt.Errorf("ruleset %s: no fetcher", src.Name)
	}
	b, err := c.Fetch(ctx, src.URL)
	if err != nil {
		return nil, fmt.Errorf("ruleset %s: download: %w", src.Name, err)
	}
	s, err := Parse(src.Format, b)
	if err != nil {
		return nil, fmt.Errorf("ruleset %s: the download is not a %s rule set: %w", src.Name, src.Format, err)
	}
	if c.Dir == "" {
		return s, nil
	}
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("ruleset %s: cache: %w", src.Name, err)
	}
	if err := atomicfile.WriteFile(c.path(&src), b, 0o600); err != nil {
		return nil, fmt.Errorf("ruleset %s: cache: %w", src.Name, err)
	}
	return s, nil
}

// Get returns src's rule set: the cached one while it is younger than its
// interval, else a fresh download. When the download fails and a cached
// copy exists, Get returns that copy together with the download's error,
// so that routing goes on with the old list. A Source without a URL is
// its Data, decoded.
func (c *Cache) Get(ctx context.Context, src Source, now time.Time) (*Set, error) {
	if src.URL == "" {
		s, err := Parse(src.Format, src.Data)
		if err != nil {
			return nil, fmt.Errorf("ruleset %s: %w", src.Name, err)
		}
		return s, nil
	}
	cached, saved, cerr := c.Load(src)
	if cerr == nil && now.Sub(saved) < src.interval() {
		return cached, nil
	}
	s, err := c.Update(ctx, src)
	if err == nil {
		return s, nil
	}
	if cerr == nil {
		return cached, err
	}
	return nil, err
}
