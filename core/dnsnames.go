package core

import (
	"context"
	"net/netip"
	"sync"
	"time"

	"github.com/skiffvpn/skiff/core/dns"
	"golang.org/x/net/dns/dnsmessage"
)

// A name that the rules send direct is resolved by the direct resolver, so
// the app connects to its real address — and that flow, an address only,
// would then be routed by address rules alone (a geosite rule could not
// see it). directNames remembers which name each address of those answers
// stood for, and the TUN's handler gives the flow that name as its Host,
// so that the rules route it as the name they sent direct. (Fake addresses
// carry their names already; see dnsHandler.rewrite.)

// directNamesMax bounds the addresses remembered, and directNamesTTL how
// long one is kept beyond its answer's use.
const (
	directNamesMax = 16384
	directNamesTTL = 30 * time.Minute
)

type directNames struct {
	mu    sync.RWMutex
	names map[netip.Addr]nameAt
}

type nameAt struct {
	name string
	at   time.Time
}

// lookup returns the name ip was an answer for, if it was one lately.
func (d *directNames) lookup(ip netip.Addr) (string, bool) {
	d.mu.RLock()
	e, ok := d.names[ip.Unmap()]
	d.mu.RUnlock()
	if !ok || time.Since(e.at) > directNamesTTL {
		return "", false
	}
	return e.name, true
}

func (d *directNames) record(name string, addrs []netip.Addr) {
	now := time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.names == nil {
		d.names = map[netip.Addr]nameAt{}
	}
	if len(d.names)+len(addrs) > directNamesMax {
		for a, e := range d.names {
			if now.Sub(e.at) > directNamesTTL/4 {
				delete(d.names, a)
			}
		}
		if len(d.names)+len(addrs) > directNamesMax {
			clear(d.names)
		}
	}
	for _, a := range addrs {
		d.names[a.Unmap()] = nameAt{name, now}
	}
}

// recordingUpstream is the direct resolver, noting the addresses of each
// answer in names.
type recordingUpstream struct {
	next  dns.Upstream
	names *directNames
}

func (u *recordingUpstream) Exchange(ctx context.Context, msg []byte) ([]byte, error) {
	resp, err := u.next.Exchange(ctx, msg)
	if err != nil {
		return resp, err
	}
	var p dnsmessage.Parser
	if _, err := p.Start(resp); err != nil {
		return resp, nil
	}
	q, err := p.Question()
	if err != nil {
		return resp, nil
	}
	name, ok := dns.CanonicalName(q.Name.String())
	if !ok {
		return resp, nil
	}
	p.SkipAllQuestions()
	var addrs []netip.Addr
	for len(addrs) < 64 {
		h, err := p.AnswerHeader()
		if err != nil {
			break
		}
		switch h.Type {
		case dnsmessage.TypeA:
			if r, err := p.AResource(); err == nil {
				addrs = append(addrs, netip.AddrFrom4(r.A))
			}
		case dnsmessage.TypeAAAA:
			if r, err := p.AAAAResource(); err == nil {
				addrs = append(addrs, netip.AddrFrom16(r.AAAA))
			}
		default:
			p.SkipAnswer()
		}
	}
	if len(addrs) > 0 {
		u.names.record(name, addrs)
	}
	return resp, nil
}
