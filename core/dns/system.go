package dns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// DefaultSystemTTL is the TTL given to answers from the system resolver,
// which does not report the real ones.
const DefaultSystemTTL = 60 * time.Second

// SystemUpstream answers from the operating system's resolver through a
// net.Resolver, for names whose flows go direct. It synthesizes the
// response message: A, AAAA, CNAME, MX, NS, PTR and TXT are looked up;
// other types get an empty answer.
//
// In TUN mode the resolver's own queries must not enter the tunnel (they
// would come back to this Server): give it a Resolver that dials with the
// bypass dialer, such as
//
//	&net.Resolver{PreferGo: true, Dial: bypass.DialContext}
//
// where bypass is the engine's outbound.SystemDialer with its Mark or
// Interface set. (On Windows and macOS, Go may use the OS resolver API
// instead; there the OS's own DNS traffic must be routed outside the
// tunnel.)
//
// A name the resolver cannot find yields an empty NOERROR answer rather
// than NXDOMAIN: the resolver does not tell "no such name" from "no
// records of this type", and an NXDOMAIN for AAAA of an IPv4-only name
// would hide its A records from some clients.
type SystemUpstream struct {
	Resolver *net.Resolver // nil means net.DefaultResolver
	TTL      time.Duration // zero means DefaultSystemTTL
}

// Exchange implements Upstream.
func (u *SystemUpstream) Exchange(ctx context.Context, msg []byte) ([]byte, error) {
	var p dnsmessage.Parser
	h, err := p.Start(msg)
	if err != nil {
		return nil, errShortMessage
	}
	q, err := p.Question()
	if err != nil {
		return nil, fmt.Errorf("dns: system resolver: query without a question: %w", err)
	}
	req := request{header: h, q: q}
	// Without the root dot: Go looks names up in /etc/hosts only then.
	name := strings.TrimSuffix(q.Name.String(), ".")
	r := u.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	ttl := uint32(u.TTL / time.Second)
	if u.TTL == 0 {
		ttl = uint32(DefaultSystemTTL / time.Second)
	}
	ctx, cancel := withTimeout(ctx)
	defer cancel()

	rh := dnsmessage.ResourceHeader{Name: q.Name, Type: q.Type, Class: q.Class, TTL: ttl}
	var adds []func(*dnsmessage.Builder) error
	switch q.Type {
	case dnsmessage.TypeA, dnsmessage.TypeAAAA:
		network := "ip4"
		if q.Type == dnsmessage.TypeAAAA {
			network = "ip6"
		}
		var ips []netip.Addr
		ips, err = r.LookupNetIP(ctx, network, name)
		for _, ip := range ips {
			ip = ip.Unmap()
			if q.Type == dnsmessage.TypeA && ip.Is4() {
				adds = append(adds, func(b *dnsmessage.Builder) error { return b.AResource(rh, dnsmessage.AResource{A: ip.As4()}) })
			} else if q.Type == dnsmessage.TypeAAAA && ip.Is6() {
				adds = append(adds, func(b *dnsmessage.Builder) error {
					return b.AAAAResource(rh, dnsmessage.AAAAResource{AAAA: ip.As16()})
				})
			}
		}
	case dnsmessage.TypeCNAME:
		var cname string
		cname, err = r.LookupCNAME(ctx, name)
		if err == nil && cname != name {
			if n, nerr := dnsmessage.NewName(cname); nerr == nil {
				adds = append(adds, func(b *dnsmessage.Builder) error { return b.CNAMEResource(rh, dnsmessage.CNAMEResource{CNAME: n}) })
			}
		}
	case dnsmessage.TypeMX:
		var mxs []*net.MX
		mxs, err = r.LookupMX(ctx, name)
		for _, mx := range mxs {
			if n, nerr := dnsmessage.NewName(mx.Host); nerr == nil {
				pref := mx.Pref
				adds = append(adds, func(b *dnsmessage.Builder) error {
					return b.MXResource(rh, dnsmessage.MXResource{Pref: pref, MX: n})
				})
			}
		}
	case dnsmessage.TypeNS:
		var nss []*net.NS
		nss, err = r.LookupNS(ctx, name)
		for _, ns := range nss {
			if n, nerr := dnsmessage.NewName(ns.Host); nerr == nil {
				adds = append(adds, func(b *dnsmessage.Builder) error { return b.NSResource(rh, dnsmessage.NSResource{NS: n}) })
			}
		}
	case dnsmessage.TypeTXT:
		var txts []string
		txts, err = r.LookupTXT(ctx, name)
		for _, txt := range txts {
			var parts []string
			for len(txt) > 255 {
				parts, txt = append(parts, txt[:255]), txt[255:]
			}
			parts = append(parts, txt)
			adds = append(adds, func(b *dnsmessage.Builder) error { return b.TXTResource(rh, dnsmessage.TXTResource{TXT: parts}) })
		}
	case dnsmessage.TypePTR:
		ip, ok := reverseAddr(trimDot(lower(name)))
		if !ok {
			break
		}
		var names []string
		names, err = r.LookupAddr(ctx, ip.String())
		for _, host := range names {
			if n, nerr := dnsmessage.NewName(host); nerr == nil {
				adds = append(adds, func(b *dnsmessage.Builder) error { return b.PTRResource(rh, dnsmessage.PTRResource{PTR: n}) })
			}
		}
	}
	if err != nil {
		var de *net.DNSError
		if !errors.As(err, &de) || !de.IsNotFound {
			if ctx.Err() != nil {
				err = ctx.Err()
			}
			return nil, fmt.Errorf("dns: system resolver: %s %v: %w", name, q.Type, err)
		}
	}
	b := dnsmessage.NewBuilder(make([]byte, 0, 512), responseHeader(&req, dnsmessage.RCodeSuccess))
	b.EnableCompression()
	if err := b.StartQuestions(); err != nil {
		return nil, err
	}
	if err := b.Question(q); err != nil {
		return nil, err
	}
	if err := b.StartAnswers(); err != nil {
		return nil, err
	}
	for _, add := range adds {
		if err := add(&b); err != nil {
			return nil, fmt.Errorf("dns: system resolver: building the answer: %w", err)
		}
	}
	return b.Finish()
}

func trimDot(s string) string {
	if len(s) > 0 && s[len(s)-1] == '.' {
		return s[:len(s)-1]
	}
	return s
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
