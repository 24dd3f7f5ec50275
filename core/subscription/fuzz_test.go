package subscription

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/core/protocol"
	"github.com/skiffvpn/skiff/internal/safetext"
)

// checkResult holds for every parser: nodes are valid, warnings have
// reasons, an error with a Result means no nodes.
func checkResult(t *testing.T, res *Result, err error) {
	t.Helper()
	if res == nil {
		return
	}
	if err != nil && len(res.Nodes) > 0 {
		t.Fatalf("error %v with %d nodes", err, len(res.Nodes))
	}
	for _, n := range res.Nodes {
		if verr := n.Validate(); verr != nil {
			t.Fatalf("invalid node accepted: %v", verr)
		}
		protocol.Supported(n)
		profile.NodeID("s", n)
	}
	for _, w := range res.Warnings {
		if w.Reason == "" {
			t.Fatal("warning without a reason")
		}
	}
}

// shownClean fails when a name Parse returns holds a forbidden rune.
func shownClean(t *testing.T, res *Result) {
	t.Helper()
	shown := []string{}
	for _, n := range res.Nodes {
		shown = append(shown, n.Name)
	}
	for _, g := range res.Groups {
		shown = append(append(shown, g.Name, g.Default), g.Members...)
	}
	if r := res.Routes; r != nil {
		shown = append(shown, r.Final)
		for _, rs := range r.RuleSets {
			shown = append(shown, rs.Name)
		}
		for _, rl := range r.Rules {
			shown = append(shown, rl.Target)
		}
	}
	for _, s := range shown {
		if strings.ContainsFunc(s, safetext.Forbidden) || !utf8.ValidString(s) {
			t.Fatalf("Parse keeps %q", s)
		}
	}
}

func FuzzDetect(f *testing.F) {
	for _, s := range []string{uriList, clashYAML, singBoxJSON, sip008JSON, "", "<html>", "{", "[", "proxies:"} {
		f.Add([]byte(s))
	}
	f.Add([]byte(base64.StdEncoding.EncodeToString([]byte(uriList))))
	f.Fuzz(func(t *testing.T, b []byte) {
		format, err := Detect(b)
		res, perr := Parse(b)
		if err == nil && perr == nil && res.Format != format {
			t.Fatalf("Detect %s, Parse %s", format, res.Format)
		}
		checkResult(t, res, perr)
		if res != nil {
			shownClean(t, res)
		}
	})
}

func FuzzURIList(f *testing.F) {
	f.Add(uriList)
	f.Add("hy2://a@[::1]:1#%ZZ\nvless://x@y:1\r\n")
	f.Fuzz(func(t *testing.T, s string) {
		res := &Result{Format: FormatURIList}
		parseURIList([]byte(s), res)
		checkResult(t, res, nil)
	})
}

func FuzzBase64(f *testing.F) {
	f.Add(base64.RawURLEncoding.EncodeToString([]byte(uriList)))
	f.Add("aGk=\r\naGk")
	f.Fuzz(func(t *testing.T, s string) {
		if !isBase64Text([]byte(s)) {
			return
		}
		decodeBase64([]byte(s)) // must not panic
	})
}

func FuzzClash(f *testing.F) {
	f.Add([]byte(clashYAML))
	f.Add([]byte("proxies:\n  - {name: a, type: hysteria2, server: a, port: 1, up: '1 gbps'}\n"))
	f.Add([]byte("a: &a [1]\nproxies: [*a, *a]\n"))
	f.Add([]byte(clashGroupsYAML))
	f.Add([]byte("proxies: []\nproxy-groups: &g [{name: a, type: select, proxies: [a, b]}, {name: b, type: url-test, include-all: true, filter: '('}]\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := detectYAML(b)
		if err != nil || d.format != FormatClash {
			return
		}
		res := &Result{Format: FormatClash}
		if err := parseClash(d.yaml, res); err != nil {
			return
		}
		checkResult(t, res, nil)
		// The groups land in a profile that validates, whatever they say.
		p := profile.New()
		sub := &profile.Subscription{ID: "s"}
		p.Subscriptions = []*profile.Subscription{sub}
		if len(res.Nodes) > 0 {
			Apply(p, sub, res, time.Time{})
			if err := p.Validate(); err != nil {
				t.Fatalf("groups make an invalid profile: %v", err)
			}
		}
	})
}

func FuzzSingBox(f *testing.F) {
	f.Add([]byte(singBoxJSON))
	f.Add([]byte(`{"outbounds":[{"type":"vless","server":"a","server_port":1,"transport":{"type":"http"}}]}`))
	f.Add([]byte(`{"outbounds":[{"type":"selector","tag":"a","outbounds":["a","b"]},{"type":"urltest","tag":"b","outbounds":["a"],"interval":"x"},{"type":"direct","tag":"b"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		res := &Result{Format: FormatSingBox}
		if err := parseSingBox(b, res); err != nil {
			return
		}
		checkResult(t, res, nil)
	})
}

func FuzzSIP008(f *testing.F) {
	f.Add([]byte(sip008JSON))
	f.Add([]byte(`{"servers":[{}, 1, "x"], "bytes_used": -5}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		res := &Result{Format: FormatSIP008}
		if err := parseSIP008(b, res); err != nil {
			return
		}
		checkResult(t, res, nil)
		if ui := res.UserInfo; ui != nil && (ui.Download < 0 || ui.Total < 0) {
			t.Fatalf("negative traffic %+v", ui)
		}
	})
}

func FuzzParseUserInfo(f *testing.F) {
	f.Add("upload=455727941; download=6174315083; total=1073741824000; expire=1767225600")
	f.Add("upload=1e400; total=;expire=-1")
	f.Fuzz(func(t *testing.T, s string) {
		ui, err := ParseUserInfo(s)
		if err != nil {
			return
		}
		if ui.Upload < 0 || ui.Download < 0 || ui.Total < 0 {
			t.Fatalf("negative value from %q: %+v", s, ui)
		}
		ui.Remaining()
	})
}
