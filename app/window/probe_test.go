package window

import (
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/skiffvpn/skiff/core/profile"
)

// A Trojan node on a port nothing listens on: its probe fails at once
// (connection refused), without the network.
const trojanRefused = "trojan://pw@127.0.0.1:9?security=tls&sni=example.com#Trojan Refused"

// TestProbeResultShowsInItsRow: a node's ▶ result is in its row within a
// second, while stopped and with nothing else happening (no tick), in red
// with the reason.
func TestProbeResultShowsInItsRow(t *testing.T) {
	h := newHarness(t, Prefs{}, addLinks(t, trojanRefused))
	h.ui.tabs.SelectIndex(1)
	v := h.ui.profiles
	h.pump()
	var n *profile.Node
	for _, x := range v.shown {
		n = x
	}
	if n == nil {
		t.Fatal("no node shown")
	}
	start := time.Now()
	v.test([]*profile.Node{n})
	row := func() (lat, detail *widget.Label) {
		for _, o := range test.LaidOutObjects(v.nodeList) {
			l, ok := o.(*widget.Label)
			if !ok {
				continue
			}
			switch {
			case l.Text == "failed" || l.Text == "timeout":
				lat = l
			case strings.Contains(l.Text, "127.0.0.1:9"):
				detail = l
			}
		}
		return
	}
	for {
		h.pump()
		if lat, _ := row(); lat != nil {
			break
		}
		if time.Since(start) > time.Second {
			t.Fatalf("no result in the row after %v", time.Since(start))
		}
		time.Sleep(10 * time.Millisecond)
	}
	lat, detail := row()
	if lat.Importance != widget.DangerImportance {
		t.Errorf("failed latency importance %v, want danger (red)", lat.Importance)
	}
	if detail == nil || !strings.Contains(detail.Text, "failed: ") {
		t.Errorf("the row does not say why: %+v", detail)
	}
}
