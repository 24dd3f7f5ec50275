package ruleset

import (
	"cmp"
	"math/bits"
	"net/netip"
	"slices"
)

// ipRanges is an immutable set of addresses: CIDR prefixes merged into
// sorted, disjoint, non-adjacent ranges, searched in O(log n) without
// allocating. IPv4 and IPv6 are kept apart (an IPv4-mapped address is
// looked up as IPv4).
type ipRanges struct {
	v4 []span4
	v6 []span6
}

type span4 struct{ lo, hi uint32 }

type span6 struct{ lo, hi u128 }

type u128 struct{ hi, lo uint64 }

func (a u128) cmp(b u128) int {
	if c := cmp.Compare(a.hi, b.hi); c != 0 {
		return c
	}
	return cmp.Compare(a.lo, b.lo)
}

// next returns a+1 and whether it did not overflow.
func (a u128) next() (u128, bool) {
	if a.lo != ^uint64(0) {
		return u128{a.hi, a.lo + 1}, true
	}
	if a.hi != ^uint64(0) {
		return u128{a.hi + 1, 0}, true
	}
	return a, false
}

func (a u128) or(b u128) u128 { return u128{a.hi | b.hi, a.lo | b.lo} }

// trailingZeros is the number of zero bits below a's lowest one (128 for 0).
func (a u128) trailingZeros() int {
	if a.lo != 0 {
		return bits.TrailingZeros64(a.lo)
	}
	return 64 + bits.TrailingZeros64(a.hi)
}

// lowBits is the value whose k lowest bits are ones (0 <= k <= 128).
func lowBits(k int) u128 {
	switch {
	case k <= 0:
		return u128{}
	case k < 64:
		return u128{0, 1<<k - 1}
	case k < 128:
		return u128{1<<(k-64) - 1, ^uint64(0)}
	}
	return u128{^uint64(0), ^uint64(0)}
}

// addrOf is the address of value a: IPv4 (its low 32 bits) when width is
// 32, else IPv6.
func addrOf(a u128, width int) netip.Addr {
	if width == 32 {
		v := uint32(a.lo)
		return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
	}
	var b [16]byte
	for i := range 8 {
		b[i] = byte(a.hi >> (56 - 8*i))
		b[8+i] = byte(a.lo >> (56 - 8*i))
	}
	return netip.AddrFrom16(b)
}

func u128Of(a netip.Addr) u128 {
	b := a.As16()
	var hi, lo uint64
	for i := range 8 {
		hi = hi<<8 | uint64(b[i])
		lo = lo<<8 | uint64(b[8+i])
	}
	return u128{hi, lo}
}

func u32Of(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// newIPRanges merges prefixes (each valid) into ranges.
func newIPRanges(prefixes []netip.Prefix) ipRanges {
	var v4 []span4
	var v6 []span6
	for _, p := range prefixes {
		p = p.Masked()
		a := p.Addr()
		if a.Is4() {
			lo := u32Of(a)
			hi := lo | (^uint32(0) >> p.Bits())
			if p.Bits() == 0 {
				hi = ^uint32(0)
			}
			v4 = append(v4, span4{lo, hi})
			continue
		}
		lo := u128Of(a)
		hi := lo
		bits := p.Bits()
		switch {
		case bits <= 0:
			hi = u128{^uint64(0), ^uint64(0)}
		case bits < 64:
			hi = u128{lo.hi | ^uint64(0)>>bits, ^uint64(0)}
		case bits < 128:
			hi = u128{lo.hi, lo.lo | ^uint64(0)>>(bits-64)}
		}
		v6 = append(v6, span6{lo, hi})
	}
	slices.SortFunc(v4, func(a, b span4) int { return cmp.Compare(a.lo, b.lo) })
	slices.SortFunc(v6, func(a, b span6) int { return a.lo.cmp(b.lo) })
	return ipRanges{v4: merge4(v4), v6: merge6(v6)}
}

func merge4(s []span4) []span4 {
	out := s[:0]
	for _, r := range s {
		if n := len(out); n > 0 && (out[n-1].hi == ^uint32(0) || r.lo <= out[n-1].hi+1) {
			out[n-1].hi = max(out[n-1].hi, r.hi)
			continue
		}
		out = append(out, r)
	}
	return slices.Clip(out)
}

func merge6(s []span6) []span6 {
	out := s[:0]
	for _, r := range s {
		if n := len(out); n > 0 {
			next, ok := out[n-1].hi.next()
			if !ok || r.lo.cmp(next) <= 0 {
				if r.hi.cmp(out[n-1].hi) > 0 {
					out[n-1].hi = r.hi
				}
				continue
			}
		}
		out = append(out, r)
	}
	return slices.Clip(out)
}

func (r *ipRanges) len() int { return len(r.v4) + len(r.v6) }

// contains reports whether a is in one of the ranges.
func (r *ipRanges) contains(a netip.Addr) bool {
	a = a.Unmap()
	if a.Is4() {
		x := u32Of(a)
		i, _ := slices.BinarySearchFunc(r.v4, x, func(s span4, x uint32) int { return cmp.Compare(s.lo, x) })
		// i is the first span starting after x, or at it.
		if i < len(r.v4) && r.v4[i].lo == x {
			return true
		}
		return i > 0 && x <= r.v4[i-1].hi
	}
	if !a.Is6() {
		return false
	}
	x := u128Of(a)
	i, _ := slices.BinarySearchFunc(r.v6, x, func(s span6, x u128) int { return s.lo.cmp(x) })
	if i < len(r.v6) && r.v6[i].lo == x {
		return true
	}
	return i > 0 && x.cmp(r.v6[i-1].hi) <= 0
}
