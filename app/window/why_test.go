package window

import (
	"strings"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/fault"
	"github.com/skiffvpn/skiff/core/group"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/internal/i18n"
)

// TestCoreTextsInEveryLanguage checks that every switch reason, failure
// kind and lack the core hands over is said in each language: no key, no
// template left, the member's name kept, and not the core's English in
// another language. A kind this window does not know falls back to the
// core's English.
func TestCoreTextsInEveryLanguage(t *testing.T) {
	const english = "Hy2 01 failed: probe: dial udp 192.0.2.1:443: connect: connection refused"
	whys := []group.Why{
		{Kind: group.WhyFailed, Member: "🇭🇰 香港 Hy2 01", Fault: fault.Refused},
		{Kind: group.WhyRecovered, Member: "🇭🇰 香港 Hy2 01", Probes: 3, Over: 12 * time.Second},
		{Kind: group.WhyLatency, Member: "🇭🇰 香港 Hy2 01", RTT: 87 * time.Millisecond},
		{Kind: group.WhySelected, Member: "🇭🇰 香港 Hy2 01"},
		{Kind: group.WhyThrottled, Member: "🇭🇰 香港 Hy2 01", Rate: 120_000, Next: "VLESS 02", NextRate: 4_000_000},
	}
	faults := []fault.Kind{fault.Timeout, fault.Refused, fault.Reset, fault.Unreachable, fault.DNS, fault.TLS, fault.Auth, fault.Throttled, fault.Other}
	lacks := []*node.Lack{nil}
	for f := range lackKeys {
		lacks = append(lacks, &node.Lack{Feature: f, Value: "grpc"})
	}
	inEnglish := map[string]bool{}
	for _, l := range i18n.Languages {
		if err := setLanguage(l); err != nil {
			t.Fatal(err)
		}
		var said []string
		for _, w := range whys {
			s := switchWhy(w, english)
			if !strings.Contains(s, w.Member) || w.Next != "" && !strings.Contains(s, w.Next) {
				t.Errorf("%s: %+v said as %q, without the member", l.Code, w, s)
			}
			said = append(said, s)
		}
		for _, f := range faults {
			said = append(said, faultWords(f, english))
		}
		for _, k := range lacks {
			s := lackWords(k, english)
			if k != nil && !strings.Contains(s, k.Value) {
				t.Errorf("%s: %+v said as %q, without the value", l.Code, k, s)
			}
			said = append(said, s)
		}
		for _, s := range said {
			switch {
			case s == "" || s == english || keyLike.MatchString(s) || strings.Contains(s, "{{") || strings.Contains(s, "<no value>"):
				t.Errorf("%s: said as %q", l.Code, s)
			case l.Code == "en":
				inEnglish[s] = true
			case inEnglish[s] && !strings.Contains(s, "·"):
				t.Errorf("%s: %q is the English text", l.Code, s)
			}
		}
		if got := switchWhy(group.Why{Kind: "new-kind"}, english); got != english {
			t.Errorf("%s: an unknown kind is said as %q, want the core's English", l.Code, got)
		}
		if got := faultWords("new-kind", english); got != english {
			t.Errorf("%s: an unknown fault is said as %q, want the core's English", l.Code, got)
		}
	}
	if err := setLanguage(i18n.Languages[0]); err != nil {
		t.Fatal(err)
	}
}
