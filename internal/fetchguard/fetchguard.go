// Package fetchguard is the one policy on where the service's own fetches
// (subscriptions, rule sets) may connect. The service runs as root, and a
// URL it fetches may come from a remote provider or a redirect, so:
//
//   - link-local (169.254/16, fe80::/10: the cloud metadata services),
//     multicast, unspecified, broadcast and reserved addresses are never
//     dialed;
//   - loopback and private addresses (RFC 1918, CGNAT, ULA) only when the
//     host being dialed is the host of the URL the user typed (a local
//     subscription converter on 127.0.0.1), never a redirect's other host;
//   - anything else (public addresses) always.
//
// The check is made at dial time on the resolved address, and the socket
// dialed is that address, so a name that resolves to a public address when
// checked and to loopback when dialed (DNS rebinding) cannot get past it.
package fetchguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// ErrRefused is what errors.Is finds in every refusal.
var ErrRefused = errors.New("address refused for a fetch")

// RefusedError says which address a fetch may not connect to, and why.
type RefusedError struct {
	Host   string     // the host being dialed, as the URL names it
	IP     netip.Addr // the address it resolved to
	Reason string     // e.g. "a link-local address"
}

func (e *RefusedError) Error() string {
	where := e.IP.String()
	if e.Host != "" && e.Host != where {
		where = e.Host + " (" + where + ")"
	}
	return fmt.Sprintf("not connecting to %s: %s", where, e.Reason)
}

func (e *RefusedError) Unwrap() error { return ErrRefused }

// Special ranges that netip's predicates do not name.
var (
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8")     // RFC 791: "this host on this network"
	reserved4   = netip.MustParsePrefix("240.0.0.0/4")   // RFC 1112 (includes 255.255.255.255)
	cgnat       = netip.MustParsePrefix("100.64.0.0/10") // RFC 6598: the carrier's (and Tailscale's) private space
	siteLocal6  = netip.MustParsePrefix("fec0::/10")     // RFC 3879: deprecated, still routed as private
	compat6     = netip.MustParsePrefix("::/96")         // RFC 4291: IPv4-compatible, deprecated
	nat64       = netip.MustParsePrefix("64:ff9b::/96")  // RFC 6052: the IPv4 address in the last 32 bits
	nat64Local  = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFour   = netip.MustParsePrefix("2002::/16") // RFC 3056: the IPv4 address in bits 16–47
)

// Check reports whether a fetch may connect to ip. typed says whether the
// host being dialed is the host of the URL the user typed.
func Check(ip netip.Addr, typed bool) error {
	never, local := classify(ip)
	switch {
	case never != "":
		return &RefusedError{IP: ip, Reason: never + ", which Skiff never fetches from"}
	case local != "" && !typed:
		return &RefusedError{IP: ip, Reason: local + ", which only the host of a URL you typed may be (not a redirect to another host, nor a URL a provider sent)"}
	}
	return nil
}

// classify names why ip is never fetched from (never), or why only a
// typed URL may reach it (local); both empty: a public address.
func classify(ip netip.Addr) (never, local string) {
	ip = ip.Unmap()
	switch {
	case !ip.IsValid():
		return "no address", ""
	case ip.IsUnspecified():
		return "the unspecified address", ""
	case ip.IsLinkLocalUnicast():
		return "a link-local address", ""
	case ip.IsMulticast():
		return "a multicast address", ""
	case ip.Is4() && (thisNetwork.Contains(ip) || reserved4.Contains(ip)):
		return "a reserved or broadcast address", ""
	case ip.IsLoopback():
		return "", "a loopback address"
	case ip.IsPrivate() || cgnat.Contains(ip) || siteLocal6.Contains(ip):
		return "", "a private address"
	}
	if ip.Is6() {
		b := ip.As16()
		var v4 netip.Addr
		switch {
		case compat6.Contains(ip):
			return "an IPv4-compatible IPv6 address", ""
		case nat64.Contains(ip), nat64Local.Contains(ip):
			v4 = netip.AddrFrom4([4]byte(b[12:16]))
		case sixToFour.Contains(ip):
			v4 = netip.AddrFrom4([4]byte(b[2:6]))
		default:
			return "", ""
		}
		// An IPv4 address inside an IPv6 one is judged as itself.
		if never, local := classify(v4); never != "" || local != "" {
			return never + local + " inside an IPv6 address", ""
		}
	}
	return "", ""
}

// typedKey is the context key of the host the user typed.
type typedKey struct{}

// Typed returns ctx for a fetch of rawURL, a URL the user typed (or saved
// in the profile): its host may resolve to loopback or private addresses.
// Any other host dialed under ctx (a redirect's) may not. A fetch without
// Typed reaches public addresses only.
func Typed(ctx context.Context, rawURL string) context.Context {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return ctx
	}
	return context.WithValue(ctx, typedKey{}, normHost(u.Hostname()))
}

func typedHost(ctx context.Context) string {
	s, _ := ctx.Value(typedKey{}).(string)
	return s
}

// normHost is host as compared: lower case, without a trailing dot, an IP
// in its canonical form.
func normHost(host string) string {
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip.Unmap().String()
	}
	return host
}

// DialFunc is an http.Transport's DialContext.
type DialFunc func(ctx context.Context, network, address string) (net.Conn, error)

// LookupFunc resolves a host name to its addresses.
type LookupFunc func(ctx context.Context, host string) ([]netip.Addr, error)

// Dial returns a DialContext for a fetcher's http.Transport: it resolves
// the host with lookup (nil: the system's resolver), drops the addresses
// Check refuses, and dials the others in turn with dial, by address.
func Dial(dial DialFunc, lookup LookupFunc) DialFunc {
	if lookup == nil {
		lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(address)
		if err != nil {
			return nil, err
		}
		if _, perr := strconv.ParseUint(port, 10, 16); host == "" || perr != nil {
			return nil, fmt.Errorf("dial %q: want a host and a port number", address)
		}
		typed := typedHost(ctx) != "" && normHost(host) == typedHost(ctx)
		var ips []netip.Addr
		if ip, err := netip.ParseAddr(host); err == nil {
			ips = []netip.Addr{ip}
		} else if ips, err = lookup(ctx, host); err != nil {
			return nil, err
		}
		var errs []error
		for _, ip := range ips {
			ip = ip.Unmap()
			if err := Check(ip, typed); err != nil {
				var re *RefusedError
				if errors.As(err, &re) {
					re.Host = host
				}
				errs = append(errs, err)
				continue
			}
			c, err := dial(ctx, network, net.JoinHostPort(ip.String(), port))
			if err == nil {
				return c, nil
			}
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
		}
		if len(errs) == 0 {
			return nil, fmt.Errorf("%s: no addresses", host)
		}
		return nil, errors.Join(errs...)
	}
}
