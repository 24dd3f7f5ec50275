package subscription

import (
	"os"
	"strings"
	"testing"

	"github.com/skiffvpn/skiff/core/protocol"
)

// TestForms2026 imports issue 32's test forms: a base64 subscription of 19
// links and a mihomo file of 16 proxies, as 2026 panels write them (every
// transport and outbound they emit). Each must import as a usable node;
// what Skiff leaves out on purpose (mieru) is a warning with the reason.
func TestForms2026(t *testing.T) {
	for _, tc := range []struct {
		file     string
		nodes    int
		warnings []string // a substring of each warning, in order
	}{
		{"testdata/subscription-2026.b64", 19, nil},
		{"testdata/clash-2026.yaml", 15, []string{`"mieru"`}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			body, err := os.ReadFile(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Parse(body)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			for _, n := range res.Nodes {
				if ok, why := protocol.Supported(n); !ok {
					t.Errorf("%s (%s): unusable: %s", n.Name, n.Protocol, why)
				}
			}
			if len(res.Nodes) != tc.nodes {
				var names []string
				for _, n := range res.Nodes {
					names = append(names, n.Name)
				}
				t.Errorf("%d nodes, want %d: %q", len(res.Nodes), tc.nodes, names)
			}
			if len(res.Warnings) != len(tc.warnings) {
				t.Errorf("warnings %+v, want %d", res.Warnings, len(tc.warnings))
			}
			for i, w := range res.Warnings {
				if i < len(tc.warnings) && !strings.Contains(w.Reason, tc.warnings[i]) {
					t.Errorf("warning %d %+v, want one with %s", i, w, tc.warnings[i])
				}
			}
		})
	}
}
