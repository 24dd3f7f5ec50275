package window

import (
	"strings"
	"testing"
)

// TestFileImportIsListedByName: a file's import is listed under the
// file's name, not "Added by hand", and its groups show on Routes.
func TestFileImportIsListedByName(t *testing.T) {
	h := newHarness(t, Prefs{}, nil)
	v := h.ui.profiles
	v.importBody([]byte(hy2Link+"\n"+vlessLink+"\n"), "my-vpn.txt", "my-vpn.txt")
	var titles []string
	for _, src := range v.sources {
		title, detail, _ := v.describeSource(src)
		titles = append(titles, title+" — "+detail)
	}
	got := strings.Join(titles, "\n")
	if !strings.Contains(got, "my-vpn.txt — 2 nodes · imported from a file") || strings.Contains(got, "Added by hand") {
		t.Errorf("sources:\n%s", got)
	}
	var groups []string
	for _, g := range h.ui.routes.p.Groups {
		groups = append(groups, g.Name)
	}
	if strings.Join(groups, ",") != "Fastest,127.0.0.1" {
		t.Errorf("groups on Routes: %v", groups)
	}
}
