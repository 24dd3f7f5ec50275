package window

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/storage"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/skiffvpn/skiff/core/api"
	nodepkg "github.com/skiffvpn/skiff/core/node"
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
	noNodes  *widget.Label // the list's empty state
	testAll  *widget.Button
	paste    *widget.Button // off while a read of the clipboard runs

	p       *profile.Profile
	sources []string // sourceAll, subscription IDs, sourceHand when there are such nodes
	source  string
	shown   []*profile.Node

	mu      sync.Mutex // guards latency, order and dirty: tests finish off the UI thread
	latency map[string]string
	probed  map[string]api.ProbeResult // the last probe of each node, for its colour and failure
	order   map[string]int             // place of each tested node after the last "test all": fastest first
	dirty   bool
}

func newProfilesView(u *UI) *profilesView {
	v := &profilesView{u: u, p: profile.New(), source: sourceAll, latency: map[string]string{}, probed: map[string]api.ProbeResult{}}
	v.url = widget.NewEntry()
	v.url.SetPlaceHolder(tr("profiles.urlPlaceholder"))
	v.url.OnSubmitted = func(string) { v.addFromEntry() }
	add := widget.NewButtonWithIcon(tr("profiles.add"), theme.ContentAddIcon(), v.addFromEntry)
	add.Importance = widget.HighImportance
	v.paste = widget.NewButtonWithIcon(tr("profiles.paste"), theme.ContentPasteIcon(), v.addFromClipboard)
	file := widget.NewButtonWithIcon(tr("profiles.file"), theme.FolderOpenIcon(), v.addFromFile)
	qrFile := widget.NewButtonWithIcon(tr("profiles.qr"), theme.FileImageIcon(), v.addFromQR)
	refreshAll := widget.NewButtonWithIcon(tr("profiles.refreshAll"), theme.ViewRefreshIcon(), func() { v.refreshSubs(nil) })
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
	refreshOne := widget.NewButtonWithIcon(tr("profiles.refresh"), theme.ViewRefreshIcon(), func() {
		if v.source != sourceAll && v.source != sourceHand {
			v.refreshSubs([]string{v.source})
		}
	})
	remove := widget.NewButtonWithIcon(tr("profiles.remove"), theme.DeleteIcon(), v.removeSource)

	v.search = widget.NewEntry()
	v.search.SetPlaceHolder(tr("profiles.searchPlaceholder"))
	v.search.OnChanged = func(string) { v.filter() }
	v.testAll = widget.NewButtonWithIcon(tr("profiles.testAll"), theme.MediaFastForwardIcon(), func() { v.test(v.shown) })
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
			use := widget.NewButton(tr("profiles.use"), nil)
			share := widget.NewButtonWithIcon("", theme.MailForwardIcon(), nil)
			right := container.NewHBox(lat, test, share, use)
			return container.NewBorder(nil, nil, nil, container.NewCenter(right), container.NewVBox(name, detail))
		},
		func(i widget.ListItemID, o fyne.CanvasObject) {
			n := v.shown[i]
			box := o.(*fyne.Container)
			texts := box.Objects[0].(*fyne.Container)
			right := box.Objects[1].(*fyne.Container).Objects[0].(*fyne.Container)
			name, detail := texts.Objects[0].(*widget.Label), texts.Objects[1].(*widget.Label)
			lat, test, use := right.Objects[0].(*widget.Label), right.Objects[1].(*widget.Button), right.Objects[3].(*widget.Button)
			right.Objects[2].(*widget.Button).OnTapped = func() { v.share(n) }
			label := n.Name()
			if v.p.Selected == n.ID {
				label = "● " + label
			}
			name.SetText(label)
			if n.Unsupported != "" {
				// Greyed: the reason may be cut here, so the button
				// beside it opens it whole.
				name.Importance = widget.LowImportance
				detail.Importance = widget.LowImportance
				name.SetText(tr("profiles.unusable", M{"Name": label}))
				detail.SetText(protocolLabel(&n.Config) + " · " + n.Config.Address() + " — " + lackWords(n.Lack, n.Unsupported))
				test.SetIcon(theme.InfoIcon())
				use.Disable()
				if n.Lack != nil && n.Lack.Feature == nodepkg.FeatureInfo {
					// The provider's note (traffic left, expiry): read,
					// never tested or used.
					name.SetText("ℹ " + n.Name())
					detail.SetText(lackWords(n.Lack, n.Unsupported))
				}
			} else {
				name.Importance = widget.MediumImportance
				detail.Importance = widget.MediumImportance
				detail.SetText(protocolLabel(&n.Config) + " · " + n.Config.Address())
				test.SetIcon(theme.MediaPlayIcon())
				use.Enable()
			}
			name.Refresh()
			detail.Refresh()
			v.mu.Lock()
			lat.SetText(v.latency[n.ID])
			r, tested := v.probed[n.ID]
			v.mu.Unlock()
			lat.Importance = widget.MediumImportance
			if tested && n.Unsupported == "" {
				lat.Importance = latencyImportance(r)
				if why := probeWhy(r); why != "" {
					detail.SetText(detail.Text + " — " + tr("latency.failedWhy", M{"Why": why}))
					detail.Importance = widget.DangerImportance
					detail.Refresh()
				}
			}
			lat.Refresh()
			test.OnTapped = func() { v.test([]*profile.Node{n}) }
			if n.Unsupported != "" {
				test.OnTapped = func() {
					// In the window's words, then the core's whole reason.
					showDetails(v.u.win, n.Name(), tr("profiles.unusableWhy", M{"Why": lackWords(n.Lack, n.Unsupported), "Node": protocolLabel(&n.Config) + " · " + n.Config.Address()})+"\n\n"+n.Unsupported)
				}
			}
			use.OnTapped = func() { v.use(n.ID) }
		},
	)

	addRow := container.NewBorder(nil, nil, nil, container.NewHBox(add, v.paste, file, qrFile, refreshAll), v.url)
	left := container.NewBorder(widget.NewLabelWithStyle(tr("profiles.subscriptions"), fyne.TextAlignLeading, fyne.TextStyle{Bold: true}),
		container.NewHBox(refreshOne, remove), nil, nil, v.subList)
	v.noNodes = widget.NewLabel("")
	v.noNodes.Wrapping = fyne.TextWrapWord
	v.noNodes.Alignment = fyne.TextAlignCenter
	right := container.NewBorder(container.NewBorder(nil, nil, nil, v.testAll, v.search), nil, nil, nil,
		container.NewStack(v.nodeList, container.NewVBox(v.noNodes)))
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
		return tr("profiles.allNodes"), nodesString(len(v.p.Nodes)), false
	case sourceHand:
		return tr("profiles.addedByHand"), nodesString(v.count(sourceHand)), false
	}
	s := v.p.Subscription(id)
	if s == nil {
		return "?", "", false
	}
	title = subscriptionTitle(v.p, s)
	var parts []string
	parts = append(parts, nodesString(v.count(id)))
	if ui := s.UserInfo; ui != nil {
		if r := ui.Remaining(); r >= 0 {
			parts = append(parts, tr("profiles.dataLeft", M{"Left": bytesString(r), "Total": bytesString(ui.Total)}))
		} else if used := ui.Upload + ui.Download; used > 0 {
			parts = append(parts, tr("profiles.dataUsed", M{"Used": bytesString(used)}))
		}
		if !ui.Expire.IsZero() {
			parts = append(parts, tr("profiles.expires", M{"Date": fmtr().Date(ui.Expire)}))
		}
	}
	now := time.Now()
	switch {
	case s.URL == "":
		parts = append(parts, tr("profiles.importedFromFileAgo", M{"Age": ageString(now, s.LastSuccess)}))
	case s.LastSuccess.IsZero():
		parts = append(parts, tr("profiles.neverRefreshed"))
	default:
		parts = append(parts, tr("profiles.refreshedAgo", M{"Age": ageString(now, s.LastSuccess)}))
	}
	detail = strings.Join(parts, " · ")
	if s.LastError != "" {
		detail += "\n" + tr("profiles.lastRefreshFailed", M{"Age": ageString(now, s.LastAttempt), "Err": s.LastError})
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
	switch {
	case len(v.shown) > 0:
		v.noNodes.Hide()
	case len(v.p.Nodes) == 0:
		v.noNodes.SetText(tr("profiles.noNodes"))
		v.noNodes.Show()
	default:
		v.noNodes.SetText(tr("profiles.noMatch"))
		v.noNodes.Show()
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
		v.say(tr("profiles.enterFirst"), true)
		return
	}
	v.url.SetText("")
	v.addText(s, tr("profiles.fromLink"))
}

// pickFile shows Fyne's file dialog (limited to filter unless nil) and
// hands the picked file's path to then; a failure to open is said.
func (v *profilesView) pickFile(filter storage.FileFilter, then func(path string)) {
	fd := dialog.NewFileOpen(func(r fyne.URIReadCloser, err error) {
		if err != nil {
			v.say(tr("profiles.fileOpenFailed", M{"Err": err.Error()}), true)
			return
		}
		if r == nil {
			return
		}
		r.Close()
		then(r.URI().Path())
	}, v.u.win)
	if filter != nil {
		fd.SetFilter(filter)
	}
	fd.Resize(fyne.NewSize(700, 480))
	fd.Show()
}

// addFromFile asks for a file to import: a path can be typed or pasted,
// or picked with Browse (Fyne's file dialog, which takes no typed path).
func (v *profilesView) addFromFile() {
	path := widget.NewEntry()
	path.SetPlaceHolder(tr("profiles.filePath"))
	var d dialog.Dialog
	browse := widget.NewButtonWithIcon(tr("profiles.browse"), theme.FolderOpenIcon(), func() {
		v.pickFile(nil, path.SetText)
	})
	form := container.NewBorder(nil, nil, nil, browse, path)
	d = dialog.NewCustomConfirm(tr("profiles.fileTitle"), tr("profiles.import"), tr("dialog.cancel"), form, func(ok bool) {
		if ok {
			v.importFile(strings.TrimSpace(path.Text))
		}
	}, v.u.win)
	path.OnSubmitted = func(string) { d.Hide(); v.importFile(strings.TrimSpace(path.Text)) }
	d.Resize(fyne.NewSize(560, 160))
	d.Show()
	v.u.win.Canvas().Focus(path)
}

// importFile imports the nodes of the file at path.
func (v *profilesView) importFile(path string) {
	if path == "" {
		return
	}
	if strings.HasPrefix(path, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			path = filepath.Join(home, path[2:])
		}
	}
	f, err := os.Open(path)
	if err != nil {
		v.say(tr("profiles.fileOpenFailed", M{"Err": err.Error()}), true)
		return
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, subscription.MaxBodySize+1))
	if err != nil {
		v.say(tr("profiles.fileReadFailed", M{"Err": err.Error()}), true)
		return
	}
	v.importBody(b, filepath.Base(path), filepath.Base(path))
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
		msg := tr("profiles.importFailed", M{"Source": source, "Err": strings.TrimPrefix(err.Error(), "import: ")})
		if res != nil && len(res.Warnings) > 0 {
			msg += " (" + res.Warnings[0] + ")"
		}
		v.say(msg, true)
		return
	}
	added := res.Added
	msg := trN("profiles.imported", added, M{"Source": source})
	if dup := res.Nodes - added; dup > 0 {
		msg += " " + trN("profiles.importedDuplicates", dup)
	}
	if n := len(res.Unsupported); n > 0 {
		msg += " " + trN("profiles.importedUnsupported", n)
	}
	if w := warningsText(res); w != "" {
		msg += "\n" + w
	}
	v.say(msg, false)
}

// AddSubscription adds rawURL (or finds it) and fetches it, in the
// background (the core does: api.Backend.Import). A new subscription whose
// first fetch fails is not kept; the error says why.
func (v *profilesView) AddSubscription(rawURL string) { v.addSubscription(rawURL, "") }

// addSubscription is AddSubscription with the name a new subscription
// gets ("": the core picks one).
func (v *profilesView) addSubscription(rawURL, name string) {
	v.say(tr("profiles.adding"), false)
	var (
		res *api.ImportResult
		err error
	)
	v.u.background(func(ctx context.Context) {
		res, err = v.u.b.Import(ctx, api.ImportRequest{URL: rawURL, Name: name})
	}, func() {
		v.u.reloadProfile()
		if err != nil {
			v.say(tr("profiles.addFailed", M{"Err": err.Error()}), true)
			return
		}
		msg := tr("profiles.added", M{"What": fetchedString(res)})
		if w := warningsText(res); w != "" {
			msg += "\n" + w
		}
		v.say(msg, false)
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
		v.say(tr("profiles.nothingToRefresh"), true)
		return
	}
	v.say(trN("profiles.refreshing", len(ids)), false)
	var msgs []string
	failed := false
	v.u.background(func(ctx context.Context) {
		for _, id := range ids {
			res, err := v.u.b.Refresh(ctx, id)
			switch {
			case err != nil:
				failed = true
				msgs = append(msgs, tr("profiles.refreshFailed", M{"Err": err.Error()}))
			case res != nil:
				msgs = append(msgs, tr("profiles.refreshed", M{"What": fetchedString(res)}))
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
		v.say(tr("profiles.selectToRemove"), true)
		return
	}
	title, _, _ := v.describeSource(src)
	dialog.ShowConfirm(tr("profiles.removeTitle"), trN("profiles.removeConfirm", v.count(src), M{"Name": title}), func(ok bool) {
		if !ok {
			return
		}
		err := v.u.update(func(p *profile.Profile) error { p.RemoveSource(src); return nil })
		if err != nil {
			v.say(tr("error.saveProfile", M{"Err": err.Error()}), true)
		}
	}, v.u.win)
}

// use makes node id the profile's selection; while connected, new flows
// go through it at once (api.Backend.Select).
func (v *profilesView) use(id string) {
	name := id
	if n := v.p.Node(id); n != nil {
		name = n.Name()
	}
	v.u.pick(api.SelectRequest{ID: id}, name, v.say)
}

// test measures the latency of nodes: the core probes each through its own
// outbound, outside the tunnel (api.Backend.Probe). Each node is asked on
// its own, probeWorkers at once, so every result shows in its row as it
// comes; after a test of several the list is sorted by latency, the dead
// last (api.SortByLatency).
func (v *profilesView) test(nodes []*profile.Node) {
	var ids []string
	v.mu.Lock()
	for _, n := range nodes {
		if n.Unsupported == "" {
			v.latency[n.ID] = "…"
			delete(v.probed, n.ID)
			ids = append(ids, n.ID)
		}
	}
	v.dirty = true
	v.mu.Unlock()
	v.nodeList.Refresh()
	v.u.background(func(ctx context.Context) {
		res := make([]api.ProbeResult, len(ids))
		sem := make(chan struct{}, probeWorkers)
		var wg sync.WaitGroup
		for i, id := range ids {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				r := api.ProbeResult{ID: id}
				got, err := v.u.b.Probe(ctx, []string{id})
				switch {
				case err != nil:
					r.Error = api.Wrap(err)
				case len(got) == 1:
					r = got[0]
				}
				res[i] = r
				v.setResult(r)
				v.u.do(v.flush) // in its row at the next frame
			}()
		}
		wg.Wait()
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

// probeWorkers is how many nodes the window has probed at once: the
// core's own bound for one call (probeParallel in core/api).
const probeWorkers = 8

// setResult records a probe's outcome for the node's row.
func (v *profilesView) setResult(r api.ProbeResult) {
	v.mu.Lock()
	v.probed[r.ID] = r
	v.mu.Unlock()
	v.setLatency(r.ID, latencyText(r))
}

// latencyImportance colours a probe's outcome: fast green, slow amber,
// failed red.
func latencyImportance(r api.ProbeResult) widget.Importance {
	switch {
	case r.Error != nil || r.Timeout || r.Latency <= 0:
		return widget.DangerImportance
	case r.Latency <= 300*time.Millisecond:
		return widget.SuccessImportance
	case r.Latency <= time.Second:
		return widget.WarningImportance
	}
	return widget.DangerImportance
}

// probeWhy is why a probe failed, in the core's short words ("" when it
// did not).
func probeWhy(r api.ProbeResult) string {
	switch {
	case r.Timeout:
		return tr("latency.timeout")
	case r.Error != nil:
		if r.Error.Message != "" {
			return r.Error.Message
		}
		return tr("latency.failed")
	}
	return ""
}

// fetchedString says what a fetch brought: "12 nodes (Clash), 2 not usable yet".
func fetchedString(res *api.ImportResult) string {
	s := tr("profiles.fetched", M{"Nodes": nodesString(res.Nodes), "Format": res.Format})
	if u := len(res.Unsupported); u > 0 {
		s += ", " + trN("profiles.notUsableYet", u)
	}
	return s
}

// subscriptionTitle is how subscription s of p is named: its own name (told
// apart from others of the same name: profile.Label), else its address
// without secrets.
func subscriptionTitle(p *profile.Profile, s *profile.Subscription) string {
	if t := p.Label(s); t != "" {
		return t
	}
	return subscription.Redact(s.URL)
}

// latencyText is how a probe's outcome is shown.
func latencyText(r api.ProbeResult) string {
	switch {
	case r.Timeout:
		return tr("latency.timeout")
	case r.Error != nil:
		return tr("latency.failed")
	}
	return tr("unit.ms", M{"N": r.Latency.Milliseconds()})
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
