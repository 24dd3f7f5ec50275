// Package exitip finds the public address and country that traffic leaves
// from, as a trace service sees it. The caller supplies the dial, so the
// request takes the same route as an app's flow (the core dials through
// its router); this package knows only the services and their answer.
package exitip

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"
)

// DefaultSources are the trace services asked, in order, until one
// answers. Both speak Cloudflare's trace format (one parser, one fuzz
// target). The second is reached by name, not by 1.1.1.1: some networks
// filter 1.1.1.1 or give it to their own hosts, and a name is resolved at
// the exit, as an app's would be.
func DefaultSources() []string {
	return []string{"https://1.1.1.1/cdn-cgi/trace", "https://www.cloudflare.com/cdn-cgi/trace"}
}

// MaxBody bounds the answer read: a trace is ~250 bytes.
const MaxBody = 4 << 10

// Timeout bounds one source's request, dial included.
const Timeout = 10 * time.Second

// Info is where traffic leaves from.
type Info struct {
	IP      netip.Addr
	Country string // ISO 3166-1 alpha-2, upper case ("DE"); "XX" or "T1" are Cloudflare's unknown and Tor
}

// ErrMalformed is returned by Parse for an answer without a valid ip= and
// loc= line.
var ErrMalformed = errors.New("exitip: malformed trace")

// Parse reads a trace body ("key=value" lines; ip= and loc= are used) of
// at most MaxBody bytes.
func Parse(r io.Reader) (Info, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxBody+1))
	if err != nil {
		return Info{}, fmt.Errorf("exitip: reading the trace: %w", err)
	}
	if len(b) > MaxBody {
		return Info{}, fmt.Errorf("%w: over %d bytes", ErrMalformed, MaxBody)
	}
	var (
		info            Info
		haveIP, haveLoc bool
	)
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSuffix(sc.Text(), "\r"), "=")
		if !ok {
			continue
		}
		switch k {
		case "ip":
			ip, err := netip.ParseAddr(v)
			if err != nil || ip.Zone() != "" {
				return Info{}, fmt.Errorf("%w: ip %q", ErrMalformed, v)
			}
			info.IP, haveIP = ip.Unmap(), true
		case "loc":
			if !isCountry(v) {
				return Info{}, fmt.Errorf("%w: loc %q", ErrMalformed, v)
			}
			info.Country, haveLoc = v, true
		}
	}
	if !haveIP || !haveLoc {
		return Info{}, fmt.Errorf("%w: no ip= or loc= line", ErrMalformed)
	}
	return info, nil
}

// isCountry reports whether s is two letters A–Z.
func isCountry(s string) bool {
	return len(s) == 2 && 'A' <= s[0] && s[0] <= 'Z' && 'A' <= s[1] && s[1] <= 'Z'
}

// DialFunc opens a TCP connection to addr ("host:port").
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// Lookup asks each of urls (nil: DefaultSources) in turn over connections from
// dial, verifying TLS against roots (nil: the system's), and returns the
// first answer; the error names every source that failed.
func Lookup(ctx context.Context, dial DialFunc, roots *x509.CertPool, urls []string) (Info, error) {
	if urls == nil {
		urls = DefaultSources()
	}
	var errs []error
	for _, u := range urls {
		info, err := fetch(ctx, dial, roots, u)
		if err == nil {
			return info, nil
		}
		if ctx.Err() != nil {
			return Info{}, ctx.Err()
		}
		errs = append(errs, err)
	}
	return Info{}, errors.Join(errs...)
}

// fetch asks one source.
func fetch(ctx context.Context, dial DialFunc, roots *x509.CertPool, url string) (Info, error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	tr := &http.Transport{
		DialContext:            dial,
		TLSClientConfig:        &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		DisableKeepAlives:      true,
		MaxResponseHeaderBytes: 16 << 10,
		ForceAttemptHTTP2:      true,
	}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Info{}, fmt.Errorf("exitip: %s: %w", url, err)
	}
	resp, err := (&http.Client{Transport: tr, CheckRedirect: noRedirect}).Do(req)
	if err != nil {
		return Info{}, fmt.Errorf("exitip: %w", err) // *url.Error names the URL
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Info{}, fmt.Errorf("exitip: %s: %s", url, resp.Status)
	}
	info, err := Parse(resp.Body)
	if err != nil {
		return Info{}, fmt.Errorf("%s: %w", url, err)
	}
	return info, nil
}

func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
