package dns

import (
	"container/list"
	"sync"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// Cache bounds.
const (
	// DefaultCacheSize is the number of answers a Cache keeps when
	// NewCache is given zero.
	DefaultCacheSize = 4096
	// maxCacheTTL caps how long any answer is kept, whatever its TTL.
	maxCacheTTL = time.Hour
	// negativeTTL is how long an NXDOMAIN or empty answer without an SOA
	// record is kept (RFC 2308 lets a resolver pick; 30 s is short enough
	// that a name that appears is soon seen).
	negativeTTL = 30 * time.Second
)

// Cache keeps upstream answers for as long as their TTLs allow, up to a
// bounded number of them, dropping the least recently used first. Answers
// served from it carry TTLs reduced by the time they spent in it. It is
// safe for concurrent use.
type Cache struct {
	mu   sync.Mutex
	max  int
	ll   *list.List // of *cacheEntry, most recently used first
	byK  map[cacheKey]*list.Element
	now  func() time.Time
	hits uint64
}

type cacheKey struct {
	mode   Mode // answers from different upstreams are kept apart
	name   string
	qtype  dnsmessage.Type
	qclass dnsmessage.Class
}

type cacheEntry struct {
	key     cacheKey
	header  dnsmessage.Header
	answers []dnsmessage.Resource
	authori []dnsmessage.Resource
	addl    []dnsmessage.Resource
	stored  time.Time
	expires time.Time
}

// NewCache returns a cache of at most size answers (DefaultCacheSize when
// size is zero or less).
func NewCache(size int) *Cache {
	if size <= 0 {
		size = DefaultCacheSize
	}
	return &Cache{max: size, ll: list.New(), byK: make(map[cacheKey]*list.Element), now: time.Now}
}

// Hits returns how many queries were answered from the cache.
func (c *Cache) Hits() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits
}

// Len returns the number of answers held.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ll.Len()
}

// get builds the response to a query (ID id, question q) from a cached
// answer. It returns nil when there is no live one.
func (c *Cache) get(k cacheKey, id uint16, rd bool, q dnsmessage.Question) []byte {
	c.mu.Lock()
	el, ok := c.byK[k]
	if !ok {
		c.mu.Unlock()
		return nil
	}
	e := el.Value.(*cacheEntry)
	now := c.now()
	if !now.Before(e.expires) {
		c.ll.Remove(el)
		delete(c.byK, k)
		c.mu.Unlock()
		return nil
	}
	c.ll.MoveToFront(el)
	c.hits++
	// Copy what is needed under the lock; entries are never modified
	// after they are stored, so the slices can be shared.
	h, an, ns, ar, age := e.header, e.answers, e.authori, e.addl, now.Sub(e.stored)
	c.mu.Unlock()

	h.ID, h.RecursionDesired = id, rd
	elapsed := uint32(age / time.Second)
	b := dnsmessage.NewBuilder(make([]byte, 0, 512), h)
	b.EnableCompression()
	if b.StartQuestions() != nil || b.Question(q) != nil {
		return nil
	}
	for sec, rrs := range [][]dnsmessage.Resource{an, ns, ar} {
		var err error
		switch sec {
		case 0:
			err = b.StartAnswers()
		case 1:
			err = b.StartAuthorities()
		case 2:
			err = b.StartAdditionals()
		}
		if err != nil {
			return nil
		}
		for _, rr := range rrs {
			rr.Header.TTL -= min(elapsed, rr.Header.TTL)
			rr.Header.Length = 0
			if err := appendResource(&b, rr); err != nil {
				return nil
			}
		}
	}
	out, err := b.Finish()
	if err != nil {
		return nil
	}
	return out
}

// put stores resp, an upstream's answer, under k if it is worth keeping:
// a complete NOERROR or NXDOMAIN answer with a TTL above zero.
func (c *Cache) put(k cacheKey, resp []byte) {
	var m dnsmessage.Message
	if err := m.Unpack(resp); err != nil {
		return
	}
	if m.Truncated || (m.RCode != dnsmessage.RCodeSuccess && m.RCode != dnsmessage.RCodeNameError) {
		return
	}
	ttl, found := uint32(0), false
	consider := func(v uint32) {
		if !found || v < ttl {
			ttl, found = v, true
		}
	}
	for _, rr := range m.Answers {
		consider(rr.Header.TTL)
	}
	negative := len(m.Answers) == 0
	for _, rr := range m.Authorities {
		if soa, ok := rr.Body.(*dnsmessage.SOAResource); ok && negative {
			consider(min(rr.Header.TTL, soa.MinTTL)) // RFC 2308 section 5
		}
	}
	life := time.Duration(ttl) * time.Second
	if !found {
		life = negativeTTL
	}
	life = min(life, maxCacheTTL)
	if life <= 0 {
		return
	}
	// EDNS is between one client and one server: do not replay it.
	addl := m.Additionals[:0:0]
	for _, rr := range m.Additionals {
		if rr.Header.Type != dnsmessage.TypeOPT {
			addl = append(addl, rr)
		}
	}
	now := c.now()
	e := &cacheEntry{key: k, header: m.Header, answers: m.Answers, authori: m.Authorities, addl: addl, stored: now, expires: now.Add(life)}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byK[k]; ok {
		el.Value = e
		c.ll.MoveToFront(el)
		return
	}
	c.byK[k] = c.ll.PushFront(e)
	for c.ll.Len() > c.max {
		old := c.ll.Back()
		c.ll.Remove(old)
		delete(c.byK, old.Value.(*cacheEntry).key)
	}
}

// appendResource adds rr to the section b is in.
func appendResource(b *dnsmessage.Builder, rr dnsmessage.Resource) error {
	switch body := rr.Body.(type) {
	case *dnsmessage.AResource:
		return b.AResource(rr.Header, *body)
	case *dnsmessage.AAAAResource:
		return b.AAAAResource(rr.Header, *body)
	case *dnsmessage.CNAMEResource:
		return b.CNAMEResource(rr.Header, *body)
	case *dnsmessage.NSResource:
		return b.NSResource(rr.Header, *body)
	case *dnsmessage.PTRResource:
		return b.PTRResource(rr.Header, *body)
	case *dnsmessage.SOAResource:
		return b.SOAResource(rr.Header, *body)
	case *dnsmessage.MXResource:
		return b.MXResource(rr.Header, *body)
	case *dnsmessage.TXTResource:
		return b.TXTResource(rr.Header, *body)
	case *dnsmessage.SRVResource:
		return b.SRVResource(rr.Header, *body)
	case *dnsmessage.OPTResource:
		return b.OPTResource(rr.Header, *body)
	case *dnsmessage.SVCBResource:
		return b.SVCBResource(rr.Header, *body)
	case *dnsmessage.HTTPSResource:
		return b.HTTPSResource(rr.Header, *body)
	case *dnsmessage.UnknownResource:
		return b.UnknownResource(rr.Header, *body)
	default:
		return errUnknownResource
	}
}
