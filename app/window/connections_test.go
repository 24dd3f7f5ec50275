package window

import (
	"testing"
	"time"

	"fyne.io/fyne/v2/widget"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/stats"
)

// TestConnectionsArrange: the filter keeps the rows that name it, the
// orders sort, each row has its speed since the last update, and at
// 1920 px a figure with its unit and a long route fit their columns.
func TestConnectionsArrange(t *testing.T) {
	h := newHarness(t, Prefs{}, nil)
	v := h.ui.connections
	v.filter.OnChanged, v.sortBy.OnChanged = nil, nil // the test calls arrange itself, at its own times
	t0 := time.Now()
	conns := []stats.ConnInfo{
		{ID: 1, Network: "tcp", Source: "127.0.0.1:40001", Process: "/usr/lib/firefox/firefox", Destination: "1.1.1.1:443", Host: "one.example", Outbound: "proxy", Member: "🇭🇰 香港 IEPL 01", Down: 1000, Start: t0},
		{ID: 2, Network: "tcp", Source: "127.0.0.1:40002", Process: flow.ProcessUnknown, Destination: "2.2.2.2:443", Host: "two.example", Outbound: "direct", Down: 5000, Up: 10, Start: t0},
		{ID: 3, Network: "udp", Source: "172.19.0.1:40003", Destination: "3.3.3.3:53", Outbound: "proxy", Member: "JP 02", Down: 0, Up: 99, Start: t0},
	}
	v.now = t0
	v.arrange(conns)
	later := append([]stats.ConnInfo(nil), conns...)
	later[0].Down += 2_000_000 // 2 MB in 2 s
	v.now = t0.Add(2 * time.Second)
	ids := func(rows []stats.ConnInfo) (out []uint64) {
		for _, r := range rows {
			out = append(out, r.ID)
		}
		return
	}
	for _, tc := range []struct {
		sort   int
		filter string
		want   []uint64
	}{
		{connSortNewest, "", []uint64{3, 2, 1}},
		{connSortOldest, "", []uint64{1, 2, 3}},
		{connSortSpeed, "", []uint64{1, 2, 3}},
		{connSortDown, "", []uint64{1, 2, 3}},
		{connSortUp, "", []uint64{3, 2, 1}},
		{connSortOldest, "香港", []uint64{1}},
		{connSortOldest, "TWO.example", []uint64{2}},
		{connSortOldest, "udp", []uint64{3}},
		{connSortOldest, "firefox", []uint64{1}},
		{connSortOldest, "40001", []uint64{1}}, // the source of a named program
		{connSortOldest, "172.19", []uint64{3}},
	} {
		v.sortBy.SetSelectedIndex(tc.sort)
		v.filter.SetText(tc.filter)
		v.now = t0.Add(2 * time.Second)
		got := ids(v.arrange(later))
		if len(got) != len(tc.want) {
			t.Errorf("sort %d filter %q: %v, want %v", tc.sort, tc.filter, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("sort %d filter %q: %v, want %v", tc.sort, tc.filter, got, tc.want)
				break
			}
		}
	}
	for _, c := range []struct {
		i    int
		want string
	}{{0, "firefox"}, {1, "127.0.0.1:40002"}, {2, "172.19.0.1:40003"}} {
		if got := v.cell(conns[c.i], 0); got != c.want {
			t.Errorf("App / source of connection %d = %q, want %q", conns[c.i].ID, got, c.want)
		}
	}
	if s := v.speed[1]; s < 900_000 || s > 1_100_000 {
		t.Errorf("speed of 2 MB in 2 s: %d B/s", s)
	}

	need := func(text string) float32 { return widget.NewLabel(text).MinSize().Width }
	wide, narrow := connWidths(1900), connWidths(780)
	if n := need("HK Premium IEPL Failover Group (auto)"); wide[2] < n || wide[3] < n {
		t.Errorf("route %v and server %v px at 1900 px; a long name needs %v", wide[2], wide[3], n)
	}
	for _, ws := range [][]float32{wide, narrow} {
		if n := need(bytesString(746 * 1024)); ws[4] < n || ws[5] < n {
			t.Errorf("up %v, down %v px; %q needs %v", ws[4], ws[5], bytesString(746*1024), n)
		}
		if n := need(rateString(999 * 1024)); ws[6] < n {
			t.Errorf("speed %v px; %q needs %v", ws[6], rateString(999*1024), n)
		}
	}
}
