// Package ruleset_test checks Skiff's reading of binary sing-box rule sets
// against sing-box itself: sing-box compiles a source list into .srs, and
// Skiff must match every probe the same way from the .srs as from the
// source.
package ruleset_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/ruleset"
	"github.com/skiffvpn/skiff/test/harness"
)

// compile writes src as JSON and has sing-box compile it to .srs.
func compile(t *testing.T, singBox string, src any) (jsonBytes, srs []byte) {
	t.Helper()
	dir := t.TempDir()
	jsonBytes, err := json.Marshal(src)
	if err != nil {
		t.Fatal(err)
	}
	in, out := filepath.Join(dir, "set.json"), filepath.Join(dir, "set.srs")
	if err := os.WriteFile(in, jsonBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command(singBox, "rule-set", "compile", "--output", out, in).CombinedOutput(); err != nil {
		t.Fatalf("sing-box rule-set compile: %v\n%s", err, b)
	}
	srs, err = os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return jsonBytes, srs
}

func TestSRSMatchesSource(t *testing.T) {
	singBox := harness.NeedSingBox(t)
	r := rand.New(rand.NewPCG(3, 4))
	var exact, suffix, below, cidrs []string
	var probes []flow.Metadata
	for i := range 3000 {
		d := fmt.Sprintf("n%d-%x.example%d.cn", i, r.Uint32(), i%7)
		switch i % 3 {
		case 0:
			exact = append(exact, d)
		case 1:
			suffix = append(suffix, d)
		default:
			below = append(below, "."+d)
		}
		for _, name := range []string{d, "www." + d, "x" + d} {
			probes = append(probes, flow.Metadata{Network: flow.TCP, Destination: flow.Addr{Name: name, Port: 443}})
		}
	}
	for i := range 500 {
		a := netip.AddrFrom4([4]byte{byte(1 + r.IntN(200)), byte(r.IntN(256)), byte(r.IntN(256)), 0})
		p := netip.PrefixFrom(a, 16+r.IntN(9)).Masked()
		cidrs = append(cidrs, p.String())
		probes = append(probes,
			flow.Metadata{Network: flow.TCP, Destination: flow.Addr{IP: p.Addr(), Port: 80}},
			flow.Metadata{Network: flow.UDP, Destination: flow.Addr{IP: p.Addr().Prev(), Port: 443}})
		if i%50 == 0 {
			v6 := netip.AddrFrom16([16]byte{0x24, 0x08, byte(i), 0x10})
			cidrs = append(cidrs, netip.PrefixFrom(v6, 32).String())
			probes = append(probes, flow.Metadata{Network: flow.TCP, Destination: flow.Addr{IP: v6.Next(), Port: 443}})
		}
	}
	src := map[string]any{"version": 3, "rules": []any{
		map[string]any{"domain": exact, "domain_suffix": append(suffix, below...)},
		map[string]any{"ip_cidr": cidrs},
		map[string]any{"domain_keyword": []string{"taobao"}, "port": []int{443, 8443}, "network": "tcp"},
		map[string]any{"port_range": []string{"1000:2000"}, "domain_regex": []string{"^regex[0-9]+\\.test$"}},
		map[string]any{"type": "logical", "mode": "and", "rules": []any{
			map[string]any{"domain_suffix": []string{"and.test"}},
			map[string]any{"port": []int{22}, "invert": true},
		}},
		map[string]any{"process_name": []string{"curl"}, "domain": []string{"process.test"}},
	}}
	probes = append(probes,
		flow.Metadata{Network: flow.TCP, Destination: flow.Addr{Name: "item.taobao.com", Port: 443}},
		flow.Metadata{Network: flow.UDP, Destination: flow.Addr{Name: "item.taobao.com", Port: 443}},
		flow.Metadata{Network: flow.TCP, Destination: flow.Addr{Name: "regex12.test", Port: 1500}},
		flow.Metadata{Network: flow.TCP, Destination: flow.Addr{Name: "regex12.test", Port: 80}},
		flow.Metadata{Network: flow.TCP, Destination: flow.Addr{Name: "x.and.test", Port: 80}},
		flow.Metadata{Network: flow.TCP, Destination: flow.Addr{Name: "x.and.test", Port: 22}},
		flow.Metadata{Network: flow.TCP, Destination: flow.Addr{Name: "process.test", Port: 80}},
	)
	jsonBytes, srs := compile(t, singBox, src)
	fromJSON, err := ruleset.ParseSingBox(jsonBytes)
	if err != nil {
		t.Fatal(err)
	}
	fromSRS, err := ruleset.ParseSingBox(srs) // told apart by the magic
	if err != nil {
		t.Fatal(err)
	}
	hits := 0
	for i := range probes {
		want := fromJSON.Match(&probes[i])
		if got := fromSRS.Match(&probes[i]); got != want {
			t.Errorf("%s %v: from .srs %v, from source %v", probes[i].Network, probes[i].Destination, got, want)
		}
		if want {
			hits++
		}
	}
	if hits < len(probes)/3 {
		t.Errorf("only %d of %d probes matched: the probes do not exercise the list", hits, len(probes))
	}
	js, ss := fromJSON.Stats(), fromSRS.Stats()
	if js.Domains != ss.Domains || js.Ranges != ss.Ranges || len(fromSRS.Skipped()) != 1 {
		t.Errorf("source %+v, srs %+v, skipped %+v", js, ss, fromSRS.Skipped())
	}
	t.Logf("%d probes, %d matched; %d bytes of .srs; %+v", len(probes), hits, len(srs), ss)
}

func TestSRSVersion1(t *testing.T) {
	// Version 1 files store a suffix as the name plus ".name" (sing-box
	// before 1.10); they must read the same.
	singBox := harness.NeedSingBox(t)
	src := map[string]any{"version": 1, "rules": []any{map[string]any{"domain_suffix": []string{"v1.test", ".below.test"}}}}
	_, srs := compile(t, singBox, src)
	s, err := ruleset.ParseSRS(srs)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"v1.test": true, "a.v1.test": true, "xv1.test": false, "below.test": false, "a.below.test": true} {
		m := flow.Metadata{Network: flow.TCP, Destination: flow.Addr{Name: name, Port: 443}}
		if got := s.Match(&m); got != want {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
}
