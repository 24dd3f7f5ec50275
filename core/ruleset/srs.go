package ruleset

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"net/netip"
	"slices"
	"strings"

	"github.com/skiffvpn/skiff/core/flow"
)

// The binary sing-box rule set (.srs), as sing-box 1.8 to 1.14 writes it:
//
//	"SRS" | version u8 (1-3) | zlib( uvarint rules | rule… )
//	rule    = 0 | item… | 0xFF | invert u8          (a default rule)
//	        | 1 | mode u8 (0 and, 1 or) | uvarint n | rule… | invert u8
//	item    = type u8 | value, the value by type:
//	  strings (network, keyword, regex, port range, process, Wi-Fi…): uvarint n | (uvarint len | bytes)…
//	  u16s (port, source port, query type):                           uvarint n | u16 BE…
//	  u8s (network type):                                             uvarint n | bytes
//	  addresses (ip_cidr, source_ip_cidr): 1 | u64 BE n | (uvarint len | from | uvarint len | to)…
//	  domains: a LOUDS trie of the reversed names (see readDomainTrie)
//	  flags (network is expensive / constrained): no value
//
// Item types, in sing-box's order.
const (
	srsQueryType = iota
	srsNetwork
	srsDomain
	srsDomainKeyword
	srsDomainRegex
	srsSourceIPCIDR
	srsIPCIDR
	srsSourcePort
	srsSourcePortRange
	srsPort
	srsPortRange
	srsProcessName
	srsProcessPath
	srsPackageName
	srsWIFISSID
	srsWIFIBSSID
	srsAdGuardDomain
	srsProcessPathRegex
	srsNetworkType
	srsNetworkIsExpensive
	srsNetworkIsConstrained
	srsFinal = 0xFF
)

// Decoding limits: a real list decompresses to a few tens of MiB.
const (
	maxSRSInflated = 4 * MaxSize
	maxSRSCount    = 1 << 24 // entries of one list
)

// ParseSRS decodes a binary sing-box rule set.
func ParseSRS(data []byte) (*Set, error) {
	s, err := parseSRS(data)
	if err != nil {
		return nil, fmt.Errorf("ruleset: srs: %w", err)
	}
	return s, nil
}

func parseSRS(data []byte) (*Set, error) {
	if len(data) > MaxSize {
		return nil, fmt.Errorf("%d bytes is more than a rule set can be (%d)", len(data), MaxSize)
	}
	if len(data) < 4 || string(data[:3]) != "SRS" {
		return nil, errors.New("not a binary sing-box rule set (no SRS magic)")
	}
	if v := data[3]; v < 1 || v > 3 {
		return nil, fmt.Errorf("version %d is not 1, 2 or 3", v)
	}
	zr, err := zlib.NewReader(bytes.NewReader(data[4:]))
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	r := &srsReader{r: bufio.NewReader(io.LimitReader(zr, maxSRSInflated+1))}
	n, err := r.count()
	if err != nil {
		return nil, fmt.Errorf("rule count: %w", err)
	}
	specs, skipped, err := decodeRules(n, func(int) (spec, string, error) { return r.rule(0) })
	if err != nil {
		return nil, err
	}
	if r.read > maxSRSInflated {
		return nil, fmt.Errorf("more than %d bytes once inflated: not a rule set", maxSRSInflated)
	}
	return build(specs, append(skipped, r.skipped...))
}

// srsReader reads the inflated body, counting what it read.
type srsReader struct {
	r       *bufio.Reader
	read    int
	skipped []Skipped // entries left out of rules that were kept
}

func (r *srsReader) byte() (byte, error) {
	b, err := r.r.ReadByte()
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	r.read++
	return b, err
}

func (r *srsReader) uvarint() (uint64, error) {
	v, err := binary.ReadUvarint(r)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return v, err
}

// ReadByte makes srsReader an io.ByteReader for binary.ReadUvarint.
func (r *srsReader) ReadByte() (byte, error) { return r.byte() }

func (r *srsReader) count() (int, error) {
	v, err := r.uvarint()
	if err != nil {
		return 0, err
	}
	if v > maxSRSCount {
		return 0, fmt.Errorf("%d entries is more than a list can have", v)
	}
	return int(v), nil
}

func (r *srsReader) bytes(n int) ([]byte, error) {
	if n > maxSRSInflated-r.read {
		return nil, fmt.Errorf("a %d-byte value is more than the rule set can hold", n)
	}
	b := make([]byte, n)
	_, err := io.ReadFull(r.r, b)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	r.read += n
	return b, err
}

func (r *srsReader) strings() ([]string, error) {
	n, err := r.count()
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, min(n, 4096))
	for range n {
		l, err := r.count()
		if err != nil {
			return nil, err
		}
		b, err := r.bytes(l)
		if err != nil {
			return nil, err
		}
		out = append(out, string(b))
	}
	return out, nil
}

func (r *srsReader) uint16s() ([]uint16, error) { return bigEndians(r, 2, binary.BigEndian.Uint16) }

func (r *srsReader) u64s() ([]uint64, error) { return bigEndians(r, 8, binary.BigEndian.Uint64) }

// bigEndians reads a counted list of size-byte big-endian integers.
func bigEndians[T uint16 | uint64](r *srsReader, size int, get func([]byte) T) ([]T, error) {
	n, err := r.count()
	if err != nil {
		return nil, err
	}
	b, err := r.bytes(size * n)
	if err != nil {
		return nil, err
	}
	out := make([]T, n)
	for i := range out {
		out[i] = get(b[size*i:])
	}
	return out, nil
}

// addrRanges reads an address set into prefixes.
func (r *srsReader) addrRanges() ([]netip.Prefix, error) {
	v, err := r.byte()
	if err != nil {
		return nil, err
	}
	if v != 1 {
		return nil, fmt.Errorf("address set version %d is not 1", v)
	}
	b, err := r.bytes(8)
	if err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint64(b)
	if n > maxSRSCount {
		return nil, fmt.Errorf("%d address ranges is more than a list can have", n)
	}
	var out []netip.Prefix
	for range n {
		var ends [2]netip.Addr
		for j := range ends {
			l, err := r.count()
			if err != nil {
				return nil, err
			}
			if l != 4 && l != 16 {
				return nil, fmt.Errorf("an address of %d bytes", l)
			}
			b, err := r.bytes(l)
			if err != nil {
				return nil, err
			}
			ends[j], _ = netip.AddrFromSlice(b)
			ends[j] = ends[j].Unmap()
		}
		from, to := ends[0], ends[1]
		if from.BitLen() != to.BitLen() || to.Less(from) {
			return nil, fmt.Errorf("address range %v-%v", from, to)
		}
		out = appendRangePrefixes(out, from, to)
	}
	return out, nil
}

// appendRangePrefixes appends the CIDR prefixes that cover from-to exactly
// (from and to of one family, from <= to): each the largest block that
// starts at from, is aligned to its size and ends by to.
func appendRangePrefixes(out []netip.Prefix, from, to netip.Addr) []netip.Prefix {
	width := from.BitLen()
	a, b := u128Of(from), u128Of(to)
	if width == 32 {
		a, b = u128{0, uint64(u32Of(from))}, u128{0, uint64(u32Of(to))}
	}
	for {
		k := min(a.trailingZeros(), width)
		for k > 0 && a.or(lowBits(k)).cmp(b) > 0 {
			k--
		}
		out = append(out, netip.PrefixFrom(addrOf(a, width), width-k))
		last := a.or(lowBits(k))
		if last.cmp(b) >= 0 {
			return out
		}
		a, _ = last.next() // last < b: no overflow
	}
}

// lastOf returns the last address of p.
func lastOf(p netip.Prefix) netip.Addr {
	width := p.Addr().BitLen()
	a := u128Of(p.Addr())
	if width == 32 {
		a = u128{0, uint64(u32Of(p.Addr()))}
	}
	return addrOf(a.or(lowBits(width-p.Bits())), width)
}

// rule reads one rule; a non-empty reason says why it is skipped.
func (r *srsReader) rule(depth int) (spec, string, error) {
	var sp spec
	if depth > 8 {
		return sp, "", errors.New("logical rules nested more than 8 deep")
	}
	typ, err := r.byte()
	if err != nil {
		return sp, "", err
	}
	switch typ {
	case 0:
		return r.defaultRule()
	case 1:
		mode, err := r.byte()
		if err != nil {
			return sp, "", err
		}
		switch mode {
		case 0:
			sp.logical = "and"
		case 1:
			sp.logical = "or"
		default:
			return sp, "", fmt.Errorf("logical mode %d", mode)
		}
		n, err := r.count()
		if err != nil {
			return sp, "", err
		}
		reason := ""
		for range n {
			sub, why, err := r.rule(depth + 1)
			if err != nil {
				return sp, "", err
			}
			if why != "" && reason == "" {
				reason = why // read on: the rest of the rule must be consumed
			}
			sp.sub = append(sp.sub, sub)
		}
		inv, err := r.byte()
		if err != nil {
			return sp, "", err
		}
		sp.invert = inv != 0
		return sp, reason, nil
	}
	return sp, "", fmt.Errorf("rule type %d is not 0 or 1", typ)
}

func (r *srsReader) defaultRule() (spec, string, error) {
	var sp spec
	reason := ""
	skip := func(why string) {
		if reason == "" {
			reason = why
		}
	}
	for {
		item, err := r.byte()
		if err != nil {
			return sp, "", err
		}
		switch item {
		case srsFinal:
			inv, err := r.byte()
			if err != nil {
				return sp, "", err
			}
			sp.invert = inv != 0
			if reason == "" && !sp.hasDest() && len(sp.ports) == 0 && sp.network == "" {
				return sp, "", errors.New("rule has no condition")
			}
			return sp, reason, nil
		case srsNetwork:
			l, err := r.strings()
			if err != nil {
				return sp, "", err
			}
			switch {
			case len(l) == 1 && (l[0] == flow.TCP || l[0] == flow.UDP):
				sp.network = l[0]
			case len(l) == 2:
			default:
				return sp, "", fmt.Errorf("network %q", l)
			}
		case srsDomain:
			if err := r.domainTrie(&sp); err != nil {
				return sp, "", fmt.Errorf("domains: %w", err)
			}
		case srsDomainKeyword:
			l, err := r.strings()
			if err != nil {
				return sp, "", err
			}
			for _, k := range l {
				if k != "" {
					sp.keywords = append(sp.keywords, strings.ToLower(k))
				}
			}
		case srsDomainRegex:
			l, err := r.strings()
			if err != nil {
				return sp, "", err
			}
			sp.regexps = append(sp.regexps, l...)
		case srsIPCIDR:
			p, err := r.addrRanges()
			if err != nil {
				return sp, "", fmt.Errorf("ip_cidr: %w", err)
			}
			sp.ips = append(sp.ips, p...)
		case srsSourceIPCIDR:
			if _, err := r.addrRanges(); err != nil {
				return sp, "", err
			}
			skip("source_ip_cidr: " + singBoxUnsupported["source_ip_cidr"])
		case srsPort:
			l, err := r.uint16s()
			if err != nil {
				return sp, "", err
			}
			for _, p := range l {
				sp.ports = append(sp.ports, PortRange{p, p})
			}
		case srsPortRange:
			l, err := r.strings()
			if err != nil {
				return sp, "", err
			}
			for _, s := range l {
				pr, err := parseRange(s, ":")
				if err != nil {
					return sp, "", fmt.Errorf("port_range: %w", err)
				}
				sp.ports = append(sp.ports, pr)
			}
		case srsQueryType, srsSourcePort:
			if _, err := r.uint16s(); err != nil {
				return sp, "", err
			}
			name := "query_type"
			if item == srsSourcePort {
				name = "source_port"
			}
			skip(name + ": " + singBoxUnsupported[name])
		case srsSourcePortRange, srsProcessName, srsProcessPath, srsPackageName, srsWIFISSID, srsWIFIBSSID, srsProcessPathRegex:
			if _, err := r.strings(); err != nil {
				return sp, "", err
			}
			name := srsStringItems[item]
			skip(name + ": " + singBoxUnsupported[name])
		case srsNetworkType:
			n, err := r.count()
			if err != nil {
				return sp, "", err
			}
			if _, err := r.bytes(n); err != nil {
				return sp, "", err
			}
			skip("network_type: " + singBoxUnsupported["network_type"])
		case srsNetworkIsExpensive, srsNetworkIsConstrained:
			skip("network_is_expensive: " + singBoxUnsupported["network_is_expensive"])
		case srsAdGuardDomain:
			// Its encoding is not read, so the rest of the file cannot be.
			return sp, "", errors.New("AdGuard domain items are not supported")
		default:
			return sp, "", fmt.Errorf("item type %d is not known", item)
		}
	}
}

var srsStringItems = map[byte]string{
	srsSourcePortRange:  "source_port_range",
	srsProcessName:      "process_name",
	srsProcessPath:      "process_path",
	srsPackageName:      "package_name",
	srsWIFISSID:         "wifi_ssid",
	srsWIFIBSSID:        "wifi_bssid",
	srsProcessPathRegex: "process_path_regex",
}

// Marks at the end of a reversed name in the domain trie.
const (
	trieBelow  = '\r' // ".example.com": names below it only
	trieSuffix = '\n' // "example.com" as a suffix: it and the names below
)

// domainTrie reads sing-box's domain matcher: a reserved byte, then a trie
// of the names reversed, in LOUDS form — leaves (a bitmap of the nodes
// that end a name), the label bitmap (for each node in breadth-first order
// a 0 per child, then a 1) and the child labels in the same order. A name
// that ends in trieBelow or trieSuffix is a suffix condition; any other
// is an exact name. The names are taken out of the trie into Skiff's own
// tables.
func (r *srsReader) domainTrie(sp *spec) error {
	if _, err := r.byte(); err != nil { // reserved (the matcher version)
		return err
	}
	leaves, err := r.u64s()
	if err != nil {
		return fmt.Errorf("leaves: %w", err)
	}
	bitmap, err := r.u64s()
	if err != nil {
		return fmt.Errorf("label bitmap: %w", err)
	}
	n, err := r.count()
	if err != nil {
		return fmt.Errorf("labels: %w", err)
	}
	labels, err := r.bytes(n)
	if err != nil {
		return fmt.Errorf("labels: %w", err)
	}
	// Walk the label bitmap once: edge e (the e-th 0) leads from the
	// current node to node e+1 with label labels[e], so the children of
	// node k are the nodes first[k]+1 to first[k+1] (breadth-first order).
	nodes := len(labels) + 1
	first := make([]int32, nodes+1)
	node, edge := 0, 0
	// A word at a time: a run of zeros is that many edges, a one ends
	// the node. node <= edge: a node's children come after it, so the
	// walk below is over a tree whatever the bitmap says.
walk:
	for _, w := range bitmap {
		for pos := 0; pos < 64; {
			rest := w >> pos
			if rest == 0 {
				edge += 64 - pos
				if edge > len(labels) {
					return errors.New("more child edges than labels")
				}
				break
			}
			tz := bits.TrailingZeros64(rest)
			if edge += tz; edge > len(labels) {
				return errors.New("more child edges than labels")
			}
			pos += tz + 1
			node++
			first[node] = int32(edge)
			if node >= nodes || node > edge {
				break walk
			}
		}
	}
	if edge != len(labels) {
		return fmt.Errorf("%d labels for %d child edges", len(labels), edge)
	}
	for k := node + 1; k <= nodes; k++ {
		first[k] = int32(edge) // nodes the bitmap ended before: no children
	}
	// Depth-first from the root, the key of the node at the top of path:
	// each node is visited once (walking up from every leaf visited the
	// upper nodes once per name: half of loading geosite-cn).
	type visit struct{ node, depth int32 }
	stack := []visit{{0, 0}}
	var path, name []byte
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if v.depth > 300 {
			return errors.New("a name longer than a domain name can be")
		}
		// The parent's key is still the start of path: only its
		// descendants were visited since.
		if v.node > 0 {
			path = append(path[:v.depth-1], labels[v.node-1])
		} else {
			path = path[:0]
		}
		for c := first[v.node+1]; c > first[v.node]; c-- {
			stack = append(stack, visit{c, v.depth + 1}) // node c is reached by edge c-1
		}
		id := int(v.node)
		if id/64 >= len(leaves) || leaves[id/64]>>(id%64)&1 == 0 {
			continue
		}
		key := path
		mark := byte(0)
		if k := len(key); k > 0 && (key[k-1] == trieBelow || key[k-1] == trieSuffix) {
			mark, key = key[k-1], key[:k-1]
		}
		// The key is the name with its characters in reverse order.
		name = reverseName(name[:0], key)
		s := string(name)
		if mark == trieBelow {
			s = trimDot(s)
		}
		n := normName(s)
		if n == "" {
			r.skipped = append(r.skipped, Skipped{Entry: s, Reason: "not a domain name Skiff matches (internationalized names must be in punycode)"})
			continue
		}
		switch mark {
		case trieBelow:
			sp.below = append(sp.below, n)
		case trieSuffix:
			sp.suffix = append(sp.suffix, n)
		default:
			sp.exact = append(sp.exact, n)
		}
	}
	return nil
}

// reverseName appends to dst the characters of key in reverse order: the
// bytes, for ASCII (every name Skiff matches), else the UTF-8 runes.
func reverseName(dst, key []byte) []byte {
	ascii := true
	for _, c := range key {
		if c >= 0x80 {
			ascii = false
			break
		}
	}
	if !ascii {
		runes := []rune(string(key))
		slices.Reverse(runes)
		return append(dst, string(runes)...)
	}
	for i := len(key) - 1; i >= 0; i-- {
		dst = append(dst, key[i])
	}
	return dst
}

func trimDot(s string) string {
	if len(s) > 0 && s[0] == '.' {
		return s[1:]
	}
	return s
}
