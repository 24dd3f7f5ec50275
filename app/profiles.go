package app

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/api"
	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/core/subscription"
)

// defaultProbeURL is used for latency tests when the profile names none.
const defaultProbeURL = "http://cp.cloudflare.com/generate_204"

// Source filters of the node list that are not a subscription.
const (
	sourceAll  = "\x00all"
	sourceHand = ""
)

// profilesView lists subscriptions and their nodes.
type profilesView struct {
	u   *UI
	obj fyne.CanvasObject

	url      *widget.Entry
	status   *widget.Label
	subList  *widget.List
	search   *widget.Entry
	nodeList *widget.List
	testAll  *widget.Button

	p       *profile.Profile
	sources []string // sourceAll, subscription IDs, sourceHand when there are such nodes
	source  string
	shown   []*profile.Node

	mu      sync.Mutex // guards latency, order and dirty: tests finish off the UI thread
	latency map[string]string
	order   map[string]int // place of each tested node after the last "test all": fastest first
	dirty   bool
}

func newProfilesView(u *UI) *profilesView {
	v := &profilesView{u: u, p: profile.New(), source: sourceAll, latency: map[string]string{}}
	v.url = widget.NewEntry()
	v.url.SetPlaceHolder("Subscription URL (https://…) or a share link")
	v.url.OnSubmitted = func(string) { v.addFromEntry() }
	add := widget.NewButtonWithIcon("Add", theme.ContentAddIcon(), v.addFromEntry)
	add.Importance = widget.HighImportance
	paste := widget.NewButtonWithIcon("Paste", theme.ContentPasteIcon(), v.addFromClipboard)
	file := widget.NewButtonWithIcon("File…", theme.FolderOpenIcon(), v.addFromFile)
	refreshAll := widget.NewButtonWithIcon("Refresh all", theme.ViewRefreshIcon(), func() { v.refreshSubs(nil) })
	v.status = widget.NewLabel("")
	v.status.Wrapping = fyne.TextWrapWord
	v.status.Hide()

	v.subList = widget.NewList(
		func() int { return len(v.sources) },
		func() fyne.CanvasObject {
			title := widget.NewLabel("title")
			title.TextStyle.Bold = true
			title.Truncation = fyne.TextTruncateEllipsis
			detail := widget.NewLabel("detail")
			detail.Wrapping = fyne.TextWrapWord
			detail.TextStyle.Italic = true
			return container.NewVBox(title, detail)
		},
		func(i widget.ListItemID, o fyne.CanvasObject) {
			box := o.(*fyne.Container)
			title, detail := box.Objects[0].(*widget.Label), box.Objects[1].(*widget.Label)
			t, d, bad := v.describeSource(v.sources[i])
			title.SetText(t)
			detail.SetText(d)
			if bad {
				detail.Importance = widget.DangerImportance
			} else {
				detail.Importance = widget.MediumImportance
			}
			detail.Refresh()
			v.subList.SetItemHeight(i, box.MinSize().Height)
		},
	)
	v.subList.OnSelected = func(i widget.ListItemID) {
		v.source = v.sources[i]
		v.filter()
	}
	refreshOne := widget.NewButtonWithIcon("Refresh", theme.ViewRefreshIcon(), func() {
		if v.source != sourceAll && v.source != sourceHand {
			v.refreshSubs([]string{v.source})
		}
	})
	remove := widget.NewButtonWithIcon("Remove", theme.DeleteIcon(), v.removeSource)

	v.search = widget.NewEntry()
	v.search.SetPlaceHolder("Search name, protocol or address")
	v.search.OnChanged = func(string) { v.filter() }
	v.testAll = widget.NewButtonWithIcon("Test all", theme.MediaFastForwardIcon(), func() { v.test(v.shown) })
	v.nodeList = widget.NewList(
		func() int { return len(v.shown) },
		func() fyne.CanvasObject {
			name := widget.NewLabel("name")
			name.Truncation = fyne.TextTruncateEllipsis
			detail := widget.NewLabel("protocol address")
			detail.Truncation = fyne.TextTruncateEllipsis
			detail.TextStyle.Italic = true
			lat := widget.NewLabel("9999 ms")
			test := widget.NewButtonWithIcon("", theme.MediaPlayIcon(), nil)
			use := widget.NewButton("Use", nil)
			right := container.NewHBox(lat, test, use)
			return container.NewBorder(nil, nil, nil, container.NewCenter(right), container.NewVBox(name, detail))
		},
		func(i widget.ListItemID, o fyne.CanvasObject) {
			n := v.shown[i]
			box := o.(*fyne.Container)
			texts := box.Objects[0].(*fyne.Container)
			right := box.Objects[1].(*fyne.Container).Objects[0].(*fyne.Container)
			name, detail := texts.Objects[0].(*widget.Label), texts.Objects[1].(*widget.Label)
			lat, test, use := right.Objects[0].(*widget.Label), right.Objects[1].(*widget.Button), right.Objects[2].(*widget.Button)
			label := n.Name()
			if v.p.Selected == n.ID {
				label = "● " + label
			}
			name.SetText(label)
			if n.Unsupported != "" {
				name.Importance = widget.LowImportance
				detail.Importance = widget.LowImportance
				detail.SetText(protocolLabel(&n.Config) + " · " + n.Config.Address() + " — " + n.Unsupported)
				test.Disable()
				use.Disable()
			} else {
				name.Importance = widget.MediumImportance
				detail.Importance = widget.MediumImportance
				detail.SetText(protocolLabel(&n.Config) + " · " + n.Config.Address())
				test.Enable()
				use.Enable()
			}
			name.Refresh()
			detail.Refresh()
			v.mu.Lock()
			lat.SetText(v.latency[n.ID])
			v.mu.Unlock()
			test.OnTapped = func() { v.test([]*profile.Node{n}) }
			use.OnTapped = func() { v.use(n.ID) }
		},
	)

	addRow := container.NewBorder(nil, nil, nil, container.NewHBox(add, paste, file, refreshAll), v.url)
	left := container.NewBorder(widget.NewLabelWithStyle("Subscriptions", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}),
		container.NewHBox(refreshOne, remove), nil, nil, v.subList)
	right := container.NewBorder(container.NewBorder(nil, nil, nil, v.testAll, v.search), nil, nil, nil, v.nodeList)
	split := container.NewHSplit(left, right)
	split.Offset = 0.34
	v.obj = container.NewPadded(container.NewBorder(container.NewVBox(addRow, v.status), nil, nil, nil, split))
	return v
}

// setProfile shows p.
func (v *profilesView) setProfile(p *profile.Profile) {
	v.p = p
	v.sources = []string{sourceAll}
	for _, s := range p.Subscriptions {
		v.sources = append(v.sources, s.ID)
	}
	for _, n := range p.Nodes {
		if n.Subscription == "" {
			v.sources = append(v.sources, sourceHand)
			break
		}
	}
	found := false
	for _, s := range v.sources {
		found = found || s == v.source
	}
	if !found {
		v.source = sourceAll
	}
	v.subList.Refresh()
	v.filter()
}

// describeSource returns a source's title and details, and whether the
// details report a problem.
func (v *profilesView) describeSource(id string) (title, detail string, bad bool) {
	switch id {
	case sourceAll:
		return "All nodes", nodesString(len(v.p.Nodes)), false
	case sourceHand:
		return "Added by hand", nodesString(v.count(sourceHand)), false
	}
	s := v.p.Subscription(id)
	if s == nil {
		return "?", "", false
	}
	title = s.DisplayName()
	if title == "" {
		title = subscription.Redact(s.URL)
	}
	var parts []string
	parts = append(parts, nodesString(v.count(id)))
	if ui := s.UserInfo; ui != nil {
		if r := ui.Remaining(); r >= 0 {
			parts = append(parts, bytesString(r)+" left of "+bytesString(ui.Total))
		} else if used := ui.Upload + ui.Download; used > 0 {
			parts = append(parts, bytesString(used)+" used")
		}
		if !ui.Expire.IsZero() {
			parts = append(parts, "expires "+ui.Expire.Local().Format("2006-01-02"))
		}
	}
	now := time.Now()
	switch {
	case s.URL == "":
		parts = append(parts, "imported from a file "+ageString(now, s.LastSuccess)+" ago")
	case s.LastSuccess.IsZero():
		parts = append(parts, "never refreshed")
	default:
		parts = append(parts, "refreshed "+ageString(now, s.LastSuccess)+" ago")
	}
	detail = strings.Join(parts, " · ")
	if s.LastError != "" {
		detail += "\nLast refresh failed " + ageString(now, s.LastAttempt) + " ago: " + s.LastError
		bad = true
	}
	return title, detail, bad
}

func (v *profilesView) count(source string) int {
	c := 0
	for _, n := range v.p.Nodes {
		if n.Subscription == source {
			c++
		}
	}
	return c
}

// filter recomputes the shown nodes from the source and the search text.
func (v *profilesView) filter() {
	q := strings.ToLower(strings.TrimSpace(v.search.Text))
	v.shown = v.shown[:0]
	for _, n := range v.p.Nodes {
		if v.source != sourceAll && n.Subscription != v.source {
			continue
		}
		if q != "" {
			hay := strings.ToLower(n.Name() + " " + protocolLabel(&n.Config) + " " + n.Config.Address())
			if !strings.Contains(hay, q) {
				continue
			}
		}
		v.shown = append(v.shown, n)
	}
	// After "test all": by latency (api.SortByLatency), untested nodes
	// after the tested ones, each in the provider's order otherwise.
	v.mu.Lock()
	order := v.order
	v.mu.Unlock()
	if len(order) > 0 {
		place := func(n *profile.Node) int {
			if i, ok := order[n.ID]; ok {
				return i
			}
			return len(order)
		}
		sort.SliceStable(v.shown, func(i, j int) bool { return place(v.shown[i]) < place(v.shown[j]) })
	}
	v.nodeList.Refresh()
}

// Shown returns the names of the nodes in the list, for tests.
func (v *profilesView) Shown() []string {
	out := make([]string, len(v.shown))
	for i, n := range v.shown {
		out[i] = n.Name()
	}
	return out
}

// say shows a short message above the lists ("" hides it).
func (v *profilesView) say(msg string, bad bool) {
	if msg == "" {
		v.status.Hide()
		return
	}
	v.status.SetText(msg)
	if bad {
		v.status.Importance = widget.DangerImportance
	} else {
		v.status.Importance = widget.SuccessImportance
	}
	v.status.Show()
	v.status.Refresh()
}

func (v *profilesView) addFromEntry() {
	s := strings.TrimSpace(v.url.Text)
	if s == "" {
		v.say("Enter a subscription URL or a share link first.", true)
		return
	}
	v.url.SetText("")
	v.addText(s, "the link")
}

func (v *profilesView) addFromClipboard() {
	s := strings.TrimSpace(v.u.fa.Clipboard().Content())
	if s == "" {
		v.say("The clipboard is empty: copy a subscription URL or share links first.", true)
		return
	}
	v.addText(s, "the clipboard")
}

func (v *profilesView) addFromFile() {
	d := dialog.NewFileOpen(func(r fyne.URIReadCloser, err error) {
		if err != nil {
			v.say("Could not open the file: "+err.Error(), true)
			return
		}
		if r == nil {
			return
		}
		defer r.Close()
		b, err := io.ReadAll(io.LimitReader(r, subscription.MaxBodySize+1))
		if err != nil {
			v.say("Could not read the file: "+err.Error(), true)
			return
		}
		v.importBody(b, r.URI().Name(), r.URI().Name())
	}, v.u.win)
	d.Show()
}

// addText adds s: a subscription URL, or share links / a subscription body.
func (v *profilesView) addText(s, source string) {
	low := strings.ToLower(s)
	if (strings.HasPrefix(low, "https://") || strings.HasPrefix(low, "http://")) && !strings.ContainsAny(s, " \n\t") {
		v.AddSubscription(s)
		return
	}
	v.importBody([]byte(s), source, "")
}

// importBody imports the nodes in b (share links, base64, Clash, sing-box
// or SIP008), read from source: as a subscription named file when b is a
// file's (file is its name), else as nodes added by hand.
func (v *profilesView) importBody(b []byte, source, file string) {
	ctx, cancel := context.WithTimeout(v.u.ctx, 30*time.Second)
	defer cancel()
	res, err := v.u.b.Import(ctx, api.ImportRequest{Body: string(b), Source: file})
	v.u.reloadProfile()
	if err != nil {
		msg := fmt.Sprintf("Nothing could be imported from %s: %s", source, strings.TrimPrefix(err.Error(), "import: "))
		if res != nil && len(res.Warnings) > 0 {
			msg += " (" + res.Warnings[0] + ")"
		}
		v.say(msg, true)
		return
	}
	added := res.Added
	msg := fmt.Sprintf("Imported %d nodes from %s", added, source)
	if dup := res.Nodes - added; dup > 0 {
		msg += fmt.Sprintf(" (%d were already there)", dup)
	}
	if n := len(res.Unsupported); n > 0 {
		msg += fmt.Sprintf("; %d cannot be used by this Skiff yet (greyed)", n)
	}
	v.say(msg+".", false)
}

// AddSubscription adds rawURL (or finds it) and fetches it, in the
// background (the core does: api.Backend.Import). A new subscription whose
// first fetch fails is not kept; the error says why.
func (v *profilesView) AddSubscription(rawURL string) {
	v.say("Adding the subscription…", false)
	var (
		res *api.ImportResult
		err error
	)
	v.u.background(func(ctx context.Context) {
		res, err = v.u.b.Import(ctx, api.ImportRequest{URL: rawURL})
	}, func() {
		v.u.reloadProfile()
		if err != nil {
			v.say("The subscription could not be added: "+err.Error(), true)
			return
		}
		m := fmt.Sprintf("Added: %d nodes (%s)", res.Nodes, res.Format)
		if u := len(res.Unsupported); u > 0 {
			m += fmt.Sprintf(", %d not usable yet", u)
		}
		v.say(m, false)
	})
}

// refreshSubs refreshes the given subscriptions (nil: all) in the
// background and reports the outcome.
func (v *profilesView) refreshSubs(ids []string) {
	if ids == nil {
		for _, s := range v.p.Subscriptions {
			if s.URL != "" { // a file's import has nothing to fetch
				ids = append(ids, s.ID)
			}
		}
	}
	if len(ids) == 0 {
		v.say("There is no subscription URL to refresh: add one above (a file is imported again with File…).", true)
		return
	}
	v.say(fmt.Sprintf("Refreshing %d subscription(s)…", len(ids)), false)
	var msgs []string
	failed := false
	v.u.background(func(ctx context.Context) {
		for _, id := range ids {
			res, err := v.u.b.Refresh(ctx, id)
			switch {
			case err != nil:
				failed = true
				msgs = append(msgs, "Refresh failed: "+err.Error())
			case res != nil:
				m := fmt.Sprintf("%d nodes (%s)", res.Nodes, res.Format)
				if u := len(res.Unsupported); u > 0 {
					m += fmt.Sprintf(", %d not usable yet", u)
				}
				msgs = append(msgs, "Refreshed: "+m)
			}
		}
	}, func() {
		v.u.reloadProfile()
		v.say(strings.Join(msgs, "\n"), failed)
	})
}

// removeSource removes the selected subscription with its nodes, or the
// nodes added by hand, after asking.
func (v *profilesView) removeSource() {
	src := v.source
	if src == sourceAll {
		v.say("Select a subscription on the left to remove it.", true)
		return
	}
	title, _, _ := v.describeSource(src)
	dialog.ShowConfirm("Remove", fmt.Sprintf("Remove %q and its %d nodes?", title, v.count(src)), func(ok bool) {
		if !ok {
			return
		}
		err := v.u.update(func(p *profile.Profile) error {
			if src != sourceHand {
				subs := p.Subscriptions[:0]
				for _, s := range p.Subscriptions {
					if s.ID != src {
						subs = append(subs, s)
					}
				}
				p.Subscriptions = subs
			}
			nodes := p.Nodes[:0]
			for _, n := range p.Nodes {
				if n.Subscription != src {
					nodes = append(nodes, n)
				}
			}
			p.Nodes = nodes
			p.Prune()
			return nil
		})
		if err != nil {
			v.say("Could not save the profile: "+err.Error(), true)
		}
	}, v.u.win)
}

// use makes node id the profile's selection.
func (v *profilesView) use(id string) {
	if err := v.u.update(func(p *profile.Profile) error { p.Selected = id; return nil }); err != nil {
		v.say("Could not save the profile: "+err.Error(), true)
		return
	}
	if v.u.status().State == core.Running {
		v.say("Selected. Disconnect and connect again to switch to it.", false)
	}
}

// test measures the latency of nodes: the core probes each through its own
// outbound, outside the tunnel (api.Backend.Probe).
func (v *profilesView) test(nodes []*profile.Node) {
	var ids []string
	v.mu.Lock()
	for _, n := range nodes {
		if n.Unsupported == "" {
			v.latency[n.ID] = "…"
			ids = append(ids, n.ID)
		}
	}
	v.dirty = true
	v.mu.Unlock()
	v.nodeList.Refresh()
	v.u.background(func(ctx context.Context) {
		res, err := v.u.b.Probe(ctx, ids)
		if err != nil {
			for _, id := range ids {
				v.setLatency(id, "failed")
			}
			return
		}
		for _, r := range res {
			v.setLatency(r.ID, latencyText(r))
		}
		if len(res) > 1 {
			api.SortByLatency(res)
			v.mu.Lock()
			v.order = make(map[string]int, len(res))
			for i, r := range res {
				v.order[r.ID] = i
			}
			v.mu.Unlock()
		}
	}, func() {
		if len(ids) > 1 {
			v.filter()
		}
	})
}

// latencyText is how a probe's outcome is shown.
func latencyText(r api.ProbeResult) string {
	switch {
	case r.Timeout:
		return "timeout"
	case r.Error != nil:
		return "failed"
	}
	return fmt.Sprintf("%d ms", r.Latency.Milliseconds())
}

func (v *profilesView) setLatency(id, s string) {
	v.mu.Lock()
	v.latency[id] = s
	v.dirty = true
	v.mu.Unlock()
}

// flush redraws the node list when latency results arrived; it runs on the
// UI thread with the update loop, so a thousand results cost a few redraws.
func (v *profilesView) flush() {
	v.mu.Lock()
	d := v.dirty
	v.dirty = false
	v.mu.Unlock()
	if d {
		v.nodeList.Refresh()
	}
}
