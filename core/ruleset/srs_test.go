package ruleset

import (
	"bytes"
	"compress/zlib"
	"encoding/hex"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/skiffvpn/skiff/core/flow"
)

// smallSRSBody is the inflated body of a .srs that sing-box 1.14.1
// compiled (`sing-box rule-set compile`, version 2) from:
//
//	{"version":3,"rules":[
//	 {"domain":["exact.example","b.cn"],"domain_suffix":["cn",".below.example","x.com.cn"],
//	  "domain_keyword":["kw"],"ip_cidr":["10.0.0.0/8","2001:db8::/32","1.2.3.4/32"]},
//	 {"port":[443],"network":"tcp","domain_suffix":["p.example"]},
//	 {"type":"logical","mode":"or","rules":[{"network":"udp"},{"port_range":["1000:2000"]}]}]}
const smallSRSBody = "03000200010000000090200240016b555aa5555a69541f656e6c63700a2e6d626d616f7863652e2e7874770a636f616c786565622e0d0301026b770601000000000000000304010203040401020304040a000000040affffff1020010db80000000000000000000000001020010db8ffffffffffffffffffffffffff000001010374637002000100000000000004000100000000001aaaaa0a656c706d6178652e700a090101bbff0001010200010103756470ff00000a0109313030303a32303030ff0000"

// srsFile wraps an inflated body as a .srs file of the given version.
func srsFile(version byte, body []byte) []byte {
	var b bytes.Buffer
	b.WriteString("SRS")
	b.WriteByte(version)
	zw := zlib.NewWriter(&b)
	zw.Write(body)
	zw.Close()
	return b.Bytes()
}

// TestSRSSmall decodes sing-box's own encoding of every kind of domain
// condition (exact, suffix, "below" with a leading dot), keywords,
// addresses of both families, a port rule and a logical rule.
func TestSRSSmall(t *testing.T) {
	body, _ := hex.DecodeString(smallSRSBody)
	s, err := ParseSRS(srsFile(2, body))
	if err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Domains != 5 || st.Keywords != 1 || st.Rules != 2 {
		t.Errorf("Stats = %+v, want 5 domains, 1 keyword, 2 rules walked", st)
	}
	for _, c := range []matchCase{
		{nameFlow("exact.example", 80), true},
		{nameFlow("www.exact.example", 80), false},
		{nameFlow("b.cn", 80), true},
		{nameFlow("any.thing.cn", 80), true},
		{nameFlow("below.example", 80), false},
		{nameFlow("a.below.example", 80), true},
		{nameFlow("x.com.cn", 80), true},
		{nameFlow("a-kw-b.org", 80), true},
		{nameFlow("p.example", 443), true},
		{nameFlow("p.example", 80), false},
		{ipFlow("10.9.8.7", 80, flow.TCP), true},
		{ipFlow("1.2.3.4", 80, flow.TCP), true},
		{ipFlow("1.2.3.5", 80, flow.TCP), false},
		{ipFlow("2001:db8::1", 80, flow.TCP), true},
		{ipFlow("192.0.2.1", 1500, flow.TCP), true},
		{ipFlow("192.0.2.1", 53, flow.UDP), true},
		{ipFlow("192.0.2.1", 53, flow.TCP), false},
	} {
		if got := s.Match(c.m); got != c.want {
			t.Errorf("%v %s:%d: %v, want %v", c.m.Network, c.m.Destination.Name+c.m.Destination.IP.String(), c.m.Destination.Port, got, c.want)
		}
	}
}

// FuzzParseSRS feeds the decoder inflated bodies (the fuzzer would not get
// through zlib by itself), seeded with sing-box's own encoding.
func FuzzParseSRS(f *testing.F) {
	body, _ := hex.DecodeString(smallSRSBody)
	f.Add(byte(2), body)
	f.Add(byte(3), body[:len(body)/2])
	f.Add(byte(1), []byte{1, 0, 2, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0xff, 0, 0, 0xff, 0})
	f.Fuzz(func(t *testing.T, version byte, body []byte) {
		s, err := ParseSRS(srsFile(version, body))
		if err != nil {
			return
		}
		fuzzMatch(s)
	})
}

// checkRangePrefixes checks that ps cover from-to exactly, in order, each
// aligned and as large as it can be.
func checkRangePrefixes(t *testing.T, from, to netip.Addr, ps []netip.Prefix) {
	t.Helper()
	at := from
	for i, p := range ps {
		if p.Addr() != at || p.Masked() != p {
			t.Fatalf("%v-%v: prefix %d is %v, want one aligned at %v (%v)", from, to, i, p, at, ps)
		}
		if p.Bits() > 0 {
			wider := netip.PrefixFrom(p.Addr(), p.Bits()-1)
			if wider.Masked() == wider && lastOf(wider).Compare(to) <= 0 {
				t.Fatalf("%v-%v: prefix %v could be %v", from, to, p, wider)
			}
		}
		last := lastOf(p)
		if i == len(ps)-1 {
			if last != to {
				t.Fatalf("%v-%v: ends at %v (%v)", from, to, last, ps)
			}
			return
		}
		at = last.Next()
	}
	t.Fatalf("%v-%v: no prefixes", from, to)
}

func TestAppendRangePrefixes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	edges := [][2]string{
		{"0.0.0.0", "255.255.255.255"}, {"0.0.0.0", "0.0.0.0"}, {"255.255.255.255", "255.255.255.255"},
		{"10.0.0.1", "10.0.1.0"}, {"::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"}, {"::1", "::1:0"},
		{"2001:db8::", "2001:db8:0:0:ffff:ffff:ffff:ffff"}, {"2001:db8::ffff:ffff:ffff:ffff", "2001:db8:0:1::"},
	}
	for _, e := range edges {
		from, to := netip.MustParseAddr(e[0]), netip.MustParseAddr(e[1])
		checkRangePrefixes(t, from, to, appendRangePrefixes(nil, from, to))
	}
	for range 2000 {
		var a, b [16]byte
		for i := range a {
			a[i], b[i] = byte(rng.IntN(256)), byte(rng.IntN(256))
		}
		for _, pair := range [][2]netip.Addr{
			{netip.AddrFrom4([4]byte(a[:4])), netip.AddrFrom4([4]byte(b[:4]))},
			{netip.AddrFrom16(a), netip.AddrFrom16(b)},
		} {
			from, to := pair[0], pair[1]
			if to.Less(from) {
				from, to = to, from
			}
			checkRangePrefixes(t, from, to, appendRangePrefixes(nil, from, to))
		}
	}
}
