package dns

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sync"
)

// Default fake-IP ranges.
//
// 198.18.0.0/15 is reserved for benchmarking (RFC 2544), so no real service
// lives there; every fake-IP client uses it. For IPv6 Skiff uses the /64
// fdfe:dcba:9876:18::/64 inside the unique-local fdfe:dcba:9876::/48. The
// TUN interface's own address conventionally sits in the first /64 of that
// /48 (fdfe:dcba:9876::1/126 in sing-box's examples), so the pool keeps to
// a /64 of its own. (sing-box's example pool is fc00::/18, mihomo users
// often pick fdfe:dcba:9876::/64 or fd00::/64.)
var (
	DefaultPrefix4 = netip.MustParsePrefix("198.18.0.0/15")
	DefaultPrefix6 = netip.MustParsePrefix("fdfe:dcba:9876:18::/64")
)

// poolSkip is how many addresses at the start of each prefix the pool never
// hands out: the network address (198.18.0.0) and the first host address
// (198.18.0.1, fdfe:dcba:9876:18::1), which is left for the tunnel's DNS
// server or gateway so that it can never collide with a fake answer. The
// last IPv4 address (the broadcast address) is not handed out either.
const poolSkip = 2

// DefaultPoolSize is the number of names a Pool holds when PoolConfig.Size
// is zero. It is well below the 131,069 addresses of the default IPv4 range
// and takes about 5 MiB when full.
const DefaultPoolSize = 65536

// maxPoolSize caps PoolConfig.Size (entries are indexed by int32).
const maxPoolSize = 1 << 24

// PoolConfig configures a Pool.
type PoolConfig struct {
	// Prefix4 and Prefix6 are the ranges fake addresses come from. A zero
	// prefix disables that family (AAAA queries then get empty answers).
	// Both zero means DefaultPrefix4 and DefaultPrefix6.
	Prefix4, Prefix6 netip.Prefix
	// Size bounds how many names the pool holds at once; the least
	// recently used name gives its addresses up to a new one. Zero means
	// DefaultPoolSize; it is capped at what the prefixes can hold.
	Size int
}

// Pool hands out fake IP addresses for domain names and maps them back.
//
// Entry i of the pool owns the (poolSkip+i)-th address of each prefix, so a
// name has the same index in IPv4 and IPv6 and the address-to-name lookup
// is arithmetic plus one array read. Names are kept in least-recently-used
// order; both directions of lookup count as use, so a name whose address
// flows keep connecting to is not evicted. All operations are O(1) and safe
// for concurrent use.
type Pool struct {
	prefix4, prefix6 netip.Prefix
	base4            uint32 // first address handed out, as a number
	base6hi, base6lo uint64
	size             int

	mu      sync.Mutex
	byName  map[string]int32
	entries []poolEntry // grows up to size; index = address offset
	head    int32       // most recently used, -1 when empty
	tail    int32       // least recently used
}

type poolEntry struct {
	name       string
	prev, next int32
}

// NewPool returns an empty pool.
func NewPool(cfg PoolConfig) (*Pool, error) {
	if !cfg.Prefix4.IsValid() && !cfg.Prefix6.IsValid() {
		cfg.Prefix4, cfg.Prefix6 = DefaultPrefix4, DefaultPrefix6
	}
	if cfg.Size == 0 {
		cfg.Size = DefaultPoolSize
	}
	if cfg.Size < 0 {
		return nil, errors.New("dns: fake-IP pool size is negative")
	}
	p := &Pool{size: cfg.Size, head: -1, tail: -1}
	if pf := cfg.Prefix4; pf.IsValid() {
		if !pf.Addr().Is4() || pf.Bits() > 30 {
			return nil, fmt.Errorf("dns: fake-IP range %s: want an IPv4 prefix of /30 or wider", pf)
		}
		pf = pf.Masked()
		p.prefix4 = pf
		a := pf.Addr().As4()
		p.base4 = binary.BigEndian.Uint32(a[:]) + poolSkip
		usable := 1<<(32-pf.Bits()) - poolSkip - 1 // minus the broadcast address
		p.size = min(p.size, usable)
	}
	if pf := cfg.Prefix6; pf.IsValid() {
		if !pf.Addr().Is6() || pf.Addr().Is4In6() || pf.Bits() > 126 {
			return nil, fmt.Errorf("dns: fake-IP range %s: want an IPv6 prefix of /126 or wider", pf)
		}
		pf = pf.Masked()
		p.prefix6 = pf
		a := pf.Addr().As16()
		p.base6hi = binary.BigEndian.Uint64(a[:8])
		p.base6lo = binary.BigEndian.Uint64(a[8:]) + poolSkip
		if bits := 128 - pf.Bits(); bits < 40 {
			p.size = min(p.size, 1<<bits-poolSkip)
		}
	}
	p.size = min(p.size, maxPoolSize)
	p.byName = make(map[string]int32, min(p.size, 1024))
	return p, nil
}

// Prefix4 returns the IPv4 range, or a zero prefix when IPv4 is disabled.
func (p *Pool) Prefix4() netip.Prefix { return p.prefix4 }

// Prefix6 returns the IPv6 range, or a zero prefix when IPv6 is disabled.
func (p *Pool) Prefix6() netip.Prefix { return p.prefix6 }

// Size returns how many names the pool can hold at once.
func (p *Pool) Size() int { return p.size }

// Len returns how many names the pool holds now.
func (p *Pool) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.byName)
}

// Contains reports whether ip lies in one of the pool's ranges (whether or
// not a name holds it now). The engine uses it to recognise a flow toward a
// fake address.
func (p *Pool) Contains(ip netip.Addr) bool {
	ip = ip.Unmap()
	return p.prefix4.IsValid() && p.prefix4.Contains(ip) || p.prefix6.IsValid() && p.prefix6.Contains(ip)
}

// Lookup returns the fake addresses of name, giving it new ones (taken
// from the least recently used name when the pool is full) if it has none.
// name must already be canonical (see CanonicalName). A disabled family
// yields an invalid netip.Addr.
func (p *Pool) Lookup(name string) (v4, v6 netip.Addr) {
	if name == "" {
		return netip.Addr{}, netip.Addr{}
	}
	p.mu.Lock()
	i, ok := p.byName[name]
	if ok {
		p.touch(i)
	} else {
		i = p.allocate(name)
	}
	p.mu.Unlock()
	return p.addrs(i)
}

// Name returns the name that holds ip, and marks it as recently used.
func (p *Pool) Name(ip netip.Addr) (string, bool) {
	i, ok := p.index(ip)
	if !ok {
		return "", false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if int(i) >= len(p.entries) || p.entries[i].name == "" {
		return "", false
	}
	p.touch(i)
	return p.entries[i].name, true
}

// index returns the entry index that ip stands for.
func (p *Pool) index(ip netip.Addr) (int32, bool) {
	ip = ip.Unmap()
	var off uint64
	switch {
	case ip.Is4() && p.prefix4.IsValid() && p.prefix4.Contains(ip):
		a := ip.As4()
		off = uint64(binary.BigEndian.Uint32(a[:]) - p.base4) // wraps for the skipped addresses
	case ip.Is6() && p.prefix6.IsValid() && p.prefix6.Contains(ip):
		a := ip.As16()
		if binary.BigEndian.Uint64(a[:8]) != p.base6hi {
			return 0, false
		}
		off = binary.BigEndian.Uint64(a[8:]) - p.base6lo
	default:
		return 0, false
	}
	if off >= uint64(p.size) {
		return 0, false
	}
	return int32(off), true
}

// addrs returns the addresses of entry i.
func (p *Pool) addrs(i int32) (v4, v6 netip.Addr) {
	if p.prefix4.IsValid() {
		var a [4]byte
		binary.BigEndian.PutUint32(a[:], p.base4+uint32(i))
		v4 = netip.AddrFrom4(a)
	}
	if p.prefix6.IsValid() {
		var a [16]byte
		binary.BigEndian.PutUint64(a[:8], p.base6hi)
		binary.BigEndian.PutUint64(a[8:], p.base6lo+uint64(i))
		v6 = netip.AddrFrom16(a)
	}
	return v4, v6
}

// allocate gives name an entry: a never-used one while there are any, else
// the least recently used one. p.mu must be held.
func (p *Pool) allocate(name string) int32 {
	var i int32
	if len(p.entries) < p.size {
		i = int32(len(p.entries))
		p.entries = append(p.entries, poolEntry{prev: -1, next: -1})
	} else {
		i = p.tail
		p.unlink(i)
		delete(p.byName, p.entries[i].name)
	}
	p.entries[i].name = name
	p.byName[name] = i
	p.pushFront(i)
	return i
}

// touch moves entry i to the front of the LRU list. p.mu must be held.
func (p *Pool) touch(i int32) {
	if p.head == i {
		return
	}
	p.unlink(i)
	p.pushFront(i)
}

func (p *Pool) unlink(i int32) {
	e := &p.entries[i]
	if e.prev >= 0 {
		p.entries[e.prev].next = e.next
	} else {
		p.head = e.next
	}
	if e.next >= 0 {
		p.entries[e.next].prev = e.prev
	} else {
		p.tail = e.prev
	}
	e.prev, e.next = -1, -1
}

func (p *Pool) pushFront(i int32) {
	e := &p.entries[i]
	e.prev, e.next = -1, p.head
	if p.head >= 0 {
		p.entries[p.head].prev = i
	}
	p.head = i
	if p.tail < 0 {
		p.tail = i
	}
}
