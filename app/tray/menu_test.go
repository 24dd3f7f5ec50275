package tray

import (
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/skiffvpn/skiff/app/exitline"
	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/api"
	"github.com/skiffvpn/skiff/core/link"
	"github.com/skiffvpn/skiff/core/plan"
	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/internal/i18n"
)

func TestMakeView(t *testing.T) {
	l := i18n.New(i18n.Languages[0])
	var nodes []*profile.Node
	// Node and group names carry their flags, as providers write them:
	// the window shows the names as they are, and so does the menu where
	// its font draws flags (exitline.MenuLabel).
	menu := exitline.MenuLabel
	const exit = "Exit 203.0.113.7 · 🇩🇪 DE"
	for _, s := range []string{"hysteria2://a@127.0.0.1:9/#%F0%9F%87%AF%F0%9F%87%B5%20Tokyo", "hysteria2://b@127.0.0.1:10/#Osaka"} {
		n, err := link.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, &profile.Node{ID: profile.NodeID("", n), Config: *n})
	}
	pick := &profile.Group{ID: "pick", Name: "🇭🇰 Pick", Type: profile.GroupSelector, Members: []string{nodes[0].ID, nodes[1].ID}, Selected: nodes[1].ID}
	fail := &profile.Group{ID: "auto", Name: "Auto", Type: profile.GroupFailover, Members: []string{nodes[0].ID}}
	prof := &profile.Profile{Nodes: nodes, Groups: []*profile.Group{fail, pick}, Selected: "pick", Routing: "direct"}
	tun := api.Status{State: core.Running, Member: "Osaka", Route: &api.Route{Mode: plan.ModeTUN}, Routing: "global"}
	for _, tt := range []struct {
		name      string
		st        api.Status
		p         *profile.Profile
		mode      string
		reachable bool
		exit      string
		want      view
	}{
		{"no service", api.Status{State: core.Stopped}, nil, "", false, "",
			view{Status: "The Skiff service is not running", Toggle: "Connect", Mode: plan.ModeProxy, Routing: core.RoutingRule}},
		// A disconnected tray shows no exit, whatever was last said.
		{"stopped, a selector picked", api.Status{State: core.Stopped}, prof, plan.ModeSystemProxy, true, exit,
			view{Status: "Not connected", Toggle: "Connect", Mode: plan.ModeSystemProxy, Routing: core.RoutingDirect,
				Routes:  []entry{{"auto", "Auto", false}, {"pick", menu("🇭🇰 Pick"), true}},
				Group:   "pick",
				Members: []entry{{nodes[0].ID, menu("🇯🇵 Tokyo"), false}, {nodes[1].ID, "Osaka", true}}}},
		{"the service went while connected", tun, prof, plan.ModeProxy, false, exit,
			view{Status: "The Skiff service is not running", Running: true, Toggle: "Disconnect", Mode: plan.ModeTUN, Routing: core.RoutingGlobal,
				Routes:  []entry{{"auto", "Auto", false}, {"pick", menu("🇭🇰 Pick"), true}},
				Group:   "pick",
				Members: []entry{{nodes[0].ID, menu("🇯🇵 Tokyo"), false}, {nodes[1].ID, "Osaka", true}}}},
		// The mode and the routing that run win over those saved since.
		{"running in TUN, a failover group picked", tun, &profile.Profile{Nodes: nodes, Groups: []*profile.Group{fail}, Selected: "auto", Routing: "direct"}, plan.ModeProxy, true, exit,
			view{Status: "Via Osaka", Exit: menu(exit), Running: true, Toggle: "Disconnect", Mode: plan.ModeTUN, Routing: core.RoutingGlobal,
				Routes: []entry{{"auto", "Auto", true}}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := makeView(l, tt.st, tt.p, tt.mode, tt.reachable, tt.exit); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestRoutingEntries: the Routing submenu offers every routing the core
// has, each with its words in every language.
func TestRoutingEntries(t *testing.T) {
	if len(routings) != len(core.Routings) {
		t.Fatalf("%d entries, the core has %d routings", len(routings), len(core.Routings))
	}
	for _, lang := range i18n.Languages {
		l := i18n.New(lang)
		seen := map[string]bool{}
		for i, r := range routings {
			if r.routing != core.Routings[i] {
				t.Errorf("entry %d is %q, want %q", i, r.routing, core.Routings[i])
			}
			label := l.T(r.key, nil)
			if label == "" || label == r.key || seen[label] {
				t.Errorf("%s: %q reads %q", lang.Code, r.key, label)
			}
			seen[label] = true
		}
	}
}

// TestNoFyne: the tray process keeps no GL context: skiff-tray links
// neither Fyne nor GLFW, nor the window's image clipboard
// (golang.design/x/clipboard), on any desktop OS.
func TestNoFyne(t *testing.T) {
	for _, goos := range []string{"linux", "windows", "darwin"} {
		cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "../skiff-tray")
		cmd.Env = append(cmd.Environ(), "GOOS="+goos)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps (GOOS=%s): %v", goos, err)
		}
		for _, p := range strings.Fields(string(out)) {
			if strings.HasPrefix(p, "fyne.io/fyne") || strings.Contains(p, "go-gl/") || strings.HasPrefix(p, "golang.design/x/clipboard") ||
				p == "github.com/skiffvpn/skiff/app/window" {
				t.Errorf("GOOS=%s: skiff-tray imports %s", goos, p)
			}
		}
	}
}
