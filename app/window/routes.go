package window

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/api"
	"github.com/skiffvpn/skiff/core/group"
	"github.com/skiffvpn/skiff/core/plan"
	"github.com/skiffvpn/skiff/core/preset"
	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/core/ruleset"
	"github.com/skiffvpn/skiff/core/subscription"
)

// Rule targets and the editor's default rule kind.
const (
	targetDirect   = "direct"
	targetBlock    = "block"
	ruleTypeCustom = "domain_suffix"
)

// ruleTypes are the rule kinds the simple editor offers.
var ruleTypes = []string{"domain", "domain_suffix", "domain_keyword", "ip_cidr", "port", "private", "rule_set", "process"}

// ruleRow is one line of the rules list.
type ruleRow struct {
	text   string
	greyed bool // a subscription's rule Skiff cannot express (the text says why)
	bad    bool // a rule whose target cannot be routed to (the text says why)
	user   int  // index in the user's rules; -1: a subscription's
	// target is the core's target the running rule sends flows to
	// (route.targets), whose live state the row shows; "": none (not
	// connected, a rule the run does not use, direct or block).
	target string
}

// How the subscriptions' own rules combine with the user's: the modes in
// the order shown, and their words.
var subRulesModes = []string{profile.SubRulesAfter, profile.SubRulesFirst, profile.SubRulesOff}

func subRulesChoices() []string {
	return []string{tr("routes.subRulesAfter"), tr("routes.subRulesFirst"), tr("routes.subRulesOff")}
}

// ruleRows lists p's rules as the rules list shows them, for the route
// rt runs.
func (v *routesView) ruleRows(p *profile.Profile, rt route) []ruleRow {
	var rows []ruleRow
	// A target's problem is the core's (plan.CheckRuleTarget), checked
	// once for each subscription's rules.
	problems := map[[2]string]error{}
	row := func(r profile.Rule, sub *profile.Subscription, used bool) ruleRow {
		row := ruleRow{text: fmt.Sprintf("%s %s → %s", ruleTypeLabel(r.Type), strings.Join(r.Values, ", "), v.targetName(r.Target)), user: -1}
		key := [2]string{"", r.Target}
		if sub != nil {
			key[0] = sub.ID
		}
		err, ok := problems[key]
		if !ok {
			err = plan.CheckRuleTarget(p, sub, r.Target)
			problems[key] = err
		}
		if err != nil {
			row.text += " · " + targetProblem(err)
			row.bad = true
		}
		if used {
			row.target = liveTarget(rt, r.Target)
		}
		return row
	}
	for i, r := range p.Routes.Rules {
		rw := row(r, nil, true)
		rw.user = i
		rows = append(rows, rw)
	}
	states := map[string]core.RuleSetState{}
	for _, st := range v.u.status().RuleSets {
		states[st.Name] = st
	}
	for _, rs := range p.Routes.RuleSets {
		from := rs.URL
		if from == "" {
			from = tr("routes.ruleSetImported", M{"Size": bytesString(int64(len(rs.Data)))})
		}
		text := tr("routes.ruleSetRow", M{"Name": rs.Name, "Format": rs.Format, "From": from})
		if st, ok := states[rs.Name]; ok {
			text += " · " + ruleSetStateText(st, time.Now())
		}
		rows = append(rows, ruleRow{text: text, user: -1})
	}
	for _, sub := range p.Subscriptions {
		sr := sub.Routes
		if sr == nil {
			continue
		}
		from := " (" + subscriptionTitle(p, sub) + ")"
		off := p.Routes.SubscriptionRules == profile.SubRulesOff
		used := !off && sub.ID == rt.sub // the run uses its route's subscription's rules
		for _, r := range sr.Rules {
			rw := row(r, sub, used)
			rw.text += from
			rw.greyed = off
			rows = append(rows, rw)
		}
		if sr.Final != "" {
			rw := ruleRow{text: tr("routes.finalRow", M{"Target": v.targetName(sr.Final)}) + from, greyed: off, user: -1}
			if used {
				rw.target = liveTarget(rt, sr.Final)
			}
			rows = append(rows, rw)
		}
		for _, g := range sr.Greyed {
			rows = append(rows, ruleRow{text: tr("routes.greyedRow", M{"Rule": g.Rule, "Why": g.Reason}) + from, greyed: true, user: -1})
		}
	}
	return rows
}

// liveTarget is the core's target that a running rule naming t sends its
// flows to ("" for direct, block, and a target the run does not have).
func liveTarget(rt route, t string) string {
	name := rt.targets[t]
	if name == core.TargetDirect || name == core.TargetBlock {
		return ""
	}
	return name
}

// targetProblem says in words why a rule's target cannot be routed to
// (plan.CheckRuleTarget's error).
func targetProblem(err error) string {
	if errors.Is(err, plan.ErrTargetUnusable) {
		return tr("routes.targetUnusable")
	}
	return tr("routes.targetMissing")
}

// ruleSetStateText says how a running rule set stands: when the list in
// use came and what it holds, and why the last download failed.
func ruleSetStateText(st core.RuleSetState, now time.Time) string {
	var parts []string
	if st.Err != "" {
		parts = append(parts, tr("routes.ruleSetFailed", M{"Err": st.Err}))
	}
	if st.Updated.IsZero() {
		parts = append(parts, tr("routes.ruleSetEmpty"))
	} else {
		parts = append(parts, tr("routes.ruleSetUpdated", M{"Age": ageString(now, st.Updated), "Domains": st.Stats.Domains, "Ranges": st.Stats.Ranges}))
	}
	return strings.Join(parts, " · ")
}

// presetTitles are the preset chooser's entries: core/preset's, then
// "custom rules".
func presetTitles() []string {
	var out []string
	for _, p := range preset.List() {
		out = append(out, presetTitle(p.Name))
	}
	return append(out, tr("routes.presetCustom"))
}

// presetTitle is how a core/preset preset is shown.
func presetTitle(name string) string { return trKey(presetKeys, name, name) }

var presetKeys = map[string]string{
	preset.Everything:  "routes.presetEverything",
	preset.BypassCN:    "routes.presetBypassCN",
	preset.ProxyListed: "routes.presetListed",
}

// ruleTypeLabel is how a rule kind is shown.
func ruleTypeLabel(t string) string { return trKey(ruleTypeKeys, t, t) }

// ruleTypeKeys are the words of the rule kinds.
var ruleTypeKeys = map[string]string{
	"domain":         "rule.domain",
	"domain_suffix":  "rule.domainSuffix",
	"domain_keyword": "rule.domainKeyword",
	"ip_cidr":        "rule.ipCIDR",
	"port":           "rule.port",
	"private":        "rule.private",
	"rule_set":       "rule.ruleSet",
	"process":        "rule.process",
}

// routesView shows the failover groups, their live health and the switch
// log, and the routing rules.
type routesView struct {
	u   *UI
	obj fyne.CanvasObject

	groupList  *widget.List
	memberList *widget.List
	switchLog  *widget.List
	note       *widget.Label
	preset     *widget.Select
	ruleList   *widget.List
	noRules    *widget.Label // the rule list's empty state
	subRules   *widget.Select
	rows       []ruleRow     // the user's rules, then the subscriptions' (used and greyed)
	setsNote   *widget.Label // the outcome of "refresh rule sets"
	setsSeen   string        // the rule-set states and the route the rows were made with
	// The editor's target: typed or picked from a list of those matching
	// what is typed (a subscription may bring thousands of servers).
	target       *widget.SelectEntry
	targets      []plan.RuleTarget // every target the editor may save (plan.RuleTargets)
	targetLabels []string          // their words, each once
	targetIndex  map[string]int    // a label's index in targets
	targetShown  []string          // the labels the list offers now
	values       *widget.Entry     // the editor's values
	addRule      *widget.Button

	p        *profile.Profile
	rt       route // the route running, as update last saw it
	running  bool
	selGroup int
	live     []group.MemberState
	current  string
	switches []group.Event
}

// newRoutesView builds the Routes tab: the groups and their members above,
// the switch log and the rules below.
func newRoutesView(u *UI) *routesView {
	v := &routesView{u: u, p: profile.New(), selGroup: -1}
	v.note = widget.NewLabel("")
	v.note.Wrapping = fyne.TextWrapWord
	v.note.TextStyle.Italic = true
	top := v.groupsPane()
	bottom := container.NewHSplit(v.switchLogPane(), v.rulesPane())
	bottom.Offset = 0.4
	all := container.NewVSplit(top, bottom)
	all.Offset = 0.45
	v.obj = container.NewPadded(all)
	v.update()
	return v
}

// groupsPane is the list of groups, with the buttons that make, use and
// remove them, beside the selected group's members with their health.
func (v *routesView) groupsPane() fyne.CanvasObject {
	v.groupList = labelList(
		func() int { return len(v.p.Groups) }, "group name",
		func(i widget.ListItemID, l *widget.Label) {
			g := v.p.Groups[i]
			s := tr("routes.groupRow", M{"Name": g.Name, "Type": groupTypeLabel(g.Type), "N": len(g.Members)})
			// A rule target's live state first: the row is cut at its end.
			if live := v.groupLive(g.ID); live != "" && live != core.TargetProxy {
				s += " · " + tr("routes.groupForRules", M{"State": v.targetState(live, false)})
			}
			switch g.Origin {
			case profile.OriginProvider:
				s += " · " + tr("routes.originProvider")
			case profile.OriginAuto:
				s += " · " + tr("routes.originAuto")
			}
			if v.p.Selected == g.ID {
				s = "● " + s
			}
			l.SetText(s)
		},
	)
	v.groupList.OnSelected = func(i widget.ListItemID) { v.selGroup = i; v.update(); v.memberList.Refresh() }
	v.buildMemberList()

	makeGroups := widget.NewButtonWithIcon(tr("routes.makeGroups"), theme.ContentAddIcon(), v.makeGroups)
	useGroup := widget.NewButtonWithIcon(tr("routes.useGroup"), theme.ConfirmIcon(), func() {
		if g := v.group(); g != nil {
			v.u.pick(api.SelectRequest{ID: g.ID}, g.Name, v.sayNote)
		}
	})
	removeGroup := widget.NewButtonWithIcon("", theme.DeleteIcon(), func() {
		if g := v.group(); g != nil {
			id := g.ID
			v.selGroup = -1
			v.u.update(func(p *profile.Profile) error { p.RemoveGroup(id); return nil })
		}
	})

	groupsPane := container.NewBorder(
		container.NewHBox(widget.NewLabelWithStyle(tr("routes.groups"), fyne.TextAlignLeading, fyne.TextStyle{Bold: true}), makeGroups),
		container.NewHBox(useGroup, removeGroup), nil, nil, v.groupList)
	membersHead := widget.NewLabelWithStyle(tr("routes.members"), fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	membersHead.Wrapping = fyne.TextWrapWord
	membersPane := container.NewBorder(membersHead,
		nil, nil, nil, v.memberList)
	top := container.NewHSplit(groupsPane, membersPane)
	top.Offset = 0.4
	return top
}

// buildMemberList makes the list of the selected group's members, each with
// its health and buttons that move it up and down the order.
func (v *routesView) buildMemberList() {
	v.memberList = widget.NewList(
		func() int { return len(v.members()) },
		func() fyne.CanvasObject {
			name, health := cutLabel("member"), cutLabel("health")
			health.TextStyle.Italic = true
			use := widget.NewButton(tr("pick.use"), nil)
			up := widget.NewButtonWithIcon("", theme.MoveUpIcon(), nil)
			down := widget.NewButtonWithIcon("", theme.MoveDownIcon(), nil)
			return container.NewBorder(nil, nil, nil, container.NewHBox(up, down, use), container.NewVBox(name, health))
		},
		func(i widget.ListItemID, o fyne.CanvasObject) {
			box := o.(*fyne.Container)
			texts, btns := box.Objects[0].(*fyne.Container), box.Objects[1].(*fyne.Container)
			name, health := texts.Objects[0].(*widget.Label), texts.Objects[1].(*widget.Label)
			ids := v.members()
			id := ids[i]
			label, proto := id, ""
			if n := v.p.Node(id); n != nil {
				label, proto = n.Name(), protocolLabel(&n.Config)
			} else if g := v.p.Group(id); g != nil {
				label, proto = g.Name, tr("routes.memberGroup")
			}
			prefix := fmt.Sprintf("%d. ", i+1)
			if label == v.current && v.current != "" {
				prefix = "▶ "
			}
			g := v.group()
			use := btns.Objects[2].(*widget.Button)
			// A select group's member is picked here (live while
			// connected); the chosen one is marked.
			if g != nil && g.Type == profile.GroupSelector {
				if g.Selected == id || (g.Selected == "" && i == 0) {
					prefix = "● " + prefix
				}
				gid, member := g.ID, label
				use.OnTapped = func() { v.u.pick(api.SelectRequest{Group: gid, ID: id}, member, v.sayNote) }
				use.Show()
			} else {
				use.OnTapped = nil
				use.Hide()
			}
			name.SetText(prefix + label + "  ·  " + proto)
			health.SetText(v.healthOf(label, false))
			btns.Objects[0].(*widget.Button).OnTapped = func() { v.move(i, -1) }
			btns.Objects[1].(*widget.Button).OnTapped = func() { v.move(i, +1) }
		},
	)
	// A member's health and a switch's reason may be cut in their rows:
	// selecting one opens it whole.
	v.memberList.OnSelected = func(i widget.ListItemID) {
		if ids := v.members(); i < len(ids) {
			name := ids[i]
			if n := v.p.Node(name); n != nil {
				name = n.Name()
			} else if g := v.p.Group(name); g != nil {
				name = g.Name
			}
			showDetails(v.u.win, name, v.healthOf(name, true))
		}
		v.memberList.UnselectAll()
	}
}

// switchLogPane is the log of the groups' switches, newest first, under
// the view's note.
func (v *routesView) switchLogPane() fyne.CanvasObject {
	v.switchLog = labelList(
		func() int { return len(v.switches) }, "switch",
		func(i widget.ListItemID, l *widget.Label) {
			e := v.switches[len(v.switches)-1-i] // newest first
			from, to := e.From, e.To
			if from == "" {
				from = tr("routes.none")
			}
			if to == "" {
				to = tr("routes.none")
			}
			l.SetText(fmt.Sprintf("%s  %s: %s → %s — %s", fmtr().Clock(e.Time), v.switchGroup(e.Group), from, to, switchWhy(e.Why, e.Reason)))
		},
	)
	v.switchLog.OnSelected = func(i widget.ListItemID) {
		if i < len(v.switches) {
			e := v.switches[len(v.switches)-1-i]
			// In the window's words, then the core's whole reason.
			showDetails(v.u.win, tr("routes.switchLog"), fmtr().Clock(e.Time)+"  "+v.switchGroup(e.Group)+": "+e.From+" → "+e.To+"\n\n"+switchWhy(e.Why, e.Reason)+"\n\n"+e.Reason)
		}
		v.switchLog.UnselectAll()
	}
	logPane := container.NewBorder(container.NewVBox(widget.NewLabelWithStyle(tr("routes.switchLog"), fyne.TextAlignLeading, fyne.TextStyle{Bold: true}), v.note), nil, nil, nil, v.switchLog)
	return logPane
}

// rulesPane is the rules list with the preset, the subscriptions' rules
// mode and the editor that adds a rule or a rule set.
func (v *routesView) rulesPane() fyne.CanvasObject {
	v.preset = widget.NewSelect(presetTitles(), func(string) { v.onPreset(v.preset.SelectedIndex()) })
	v.ruleList = widget.NewList(
		func() int { return len(v.rows) },
		func() fyne.CanvasObject {
			return container.NewBorder(nil, nil, nil, widget.NewButtonWithIcon("", theme.DeleteIcon(), nil), cutLabel("rule"))
		},
		func(i widget.ListItemID, o fyne.CanvasObject) {
			row := v.rows[i]
			box := o.(*fyne.Container)
			l := box.Objects[0].(*widget.Label)
			l.SetText(v.rowText(row, false))
			l.Importance = widget.MediumImportance
			switch {
			case row.greyed:
				l.Importance = widget.LowImportance
			case row.bad:
				l.Importance = widget.DangerImportance
			}
			l.Refresh()
			del := box.Objects[1].(*widget.Button)
			del.OnTapped = func() { v.removeRule(row.user) }
			if row.user < 0 {
				del.Hide()
			} else {
				del.Show()
			}
		},
	)
	// A row may be cut (a long error, a greyed rule's reason): selecting
	// one opens it whole.
	v.ruleList.OnSelected = func(i widget.ListItemID) {
		if i < len(v.rows) {
			showDetails(v.u.win, tr("routes.rules"), v.rowText(v.rows[i], true))
		}
		v.ruleList.UnselectAll()
	}
	v.subRules = widget.NewSelect(subRulesChoices(), func(string) {
		i := v.subRules.SelectedIndex()
		if i < 0 {
			return
		}
		mode := subRulesModes[i]
		if mode == v.p.Routes.SubscriptionRules || (mode == profile.SubRulesAfter && v.p.Routes.SubscriptionRules == "") {
			return
		}
		v.u.update(func(p *profile.Profile) error { p.SetSubscriptionRules(mode); return nil })
	})
	editor := v.ruleEditor()
	v.noRules = widget.NewLabel(tr("routes.noRules"))
	v.noRules.Wrapping = fyne.TextWrapWord
	v.noRules.TextStyle.Italic = true
	rulesPane := container.NewBorder(
		container.NewVBox(container.NewBorder(nil, nil, widget.NewLabelWithStyle(tr("routes.rules"), fyne.TextAlignLeading, fyne.TextStyle{Bold: true}), nil, v.preset), v.subRules, editor),
		nil, nil, nil, container.NewStack(v.ruleList, container.NewVBox(v.noRules)))
	return rulesPane
}

// ruleEditor adds a rule: its kind, values and target, and below them
// (folded) the rule-set form.
func (v *routesView) ruleEditor() fyne.CanvasObject {
	var kindLabels []string
	for _, t := range ruleTypes {
		kindLabels = append(kindLabels, ruleTypeLabel(t))
	}
	kind := widget.NewSelect(kindLabels, nil)
	kind.SetSelectedIndex(indexOf(ruleTypes, ruleTypeCustom))
	values := widget.NewEntry()
	v.values = values
	values.SetPlaceHolder(tr("routes.valuesPlaceholder"))
	v.target = widget.NewSelectEntry(nil)
	v.target.SetPlaceHolder(tr("routes.targetPlaceholder"))
	v.target.OnChanged = v.filterTargets
	v.setTargets()
	v.addRule = widget.NewButtonWithIcon(tr("routes.addRule"), theme.ContentAddIcon(), func() {
		var vals []string
		for _, s := range strings.Split(values.Text, ",") {
			if s = strings.TrimSpace(s); s != "" {
				vals = append(vals, s)
			}
		}
		typ := ruleTypes[max(kind.SelectedIndex(), 0)]
		if len(vals) == 0 && typ != "private" {
			v.note.SetText(tr("routes.ruleNeedsValue"))
			return
		}
		i, ok := v.targetIndex[v.target.Text]
		if !ok {
			v.note.SetText(tr("routes.ruleNeedsTarget"))
			return
		}
		t := v.targets[i].ID
		values.SetText("")
		v.u.update(func(p *profile.Profile) error {
			p.AddRule(profile.Rule{Type: typ, Values: vals, Target: t})
			return nil
		})
	})

	return container.NewVBox(
		container.NewGridWithColumns(2, kind, v.target),
		container.NewBorder(nil, nil, nil, v.addRule, values),
		// Adding a rule set is rarer than reading the rules: folded, so
		// that the list keeps room at 800×600.
		widget.NewAccordion(widget.NewAccordionItem(tr("routes.ruleSetsAdd"), v.ruleSetsForm())),
	)
}

// ruleSetsForm adds a rule set by URL, or from a file imported here (its
// content is saved; the service never reads a path).
func (v *routesView) ruleSetsForm() fyne.CanvasObject {
	setName := widget.NewEntry()
	setName.SetPlaceHolder(tr("routes.ruleSetName"))
	setURL := widget.NewEntry()
	setURL.SetPlaceHolder("https://…/geosite-xx.srs")
	setFormat := widget.NewSelect([]string{ruleset.FormatSingBox, ruleset.FormatClashDomain, ruleset.FormatClashIPCIDR, ruleset.FormatClashClassical}, nil)
	setFormat.SetSelected(ruleset.FormatSingBox)
	addSet := func(data []byte) {
		rs := profile.RuleSet{Name: strings.TrimSpace(setName.Text), URL: strings.TrimSpace(setURL.Text), Format: setFormat.Selected, Data: data}
		if data != nil {
			rs.URL = ""
		}
		err := v.u.update(func(p *profile.Profile) error {
			r := p.Routes
			r.RuleSets = append(slices.Clone(r.RuleSets), rs)
			if err := plan.CheckRoutes(&r); err != nil {
				return err
			}
			p.Routes.RuleSets = r.RuleSets
			return nil
		})
		if err != nil {
			v.note.SetText(tr("routes.ruleSetNotAdded", M{"Err": err.Error()}))
			return
		}
		v.note.SetText(tr("routes.ruleSetAdded", M{"Name": rs.Name}))
		setName.SetText("")
		setURL.SetText("")
	}
	addSetURL := widget.NewButtonWithIcon(tr("routes.ruleSetAdd"), theme.ContentAddIcon(), func() { addSet(nil) })
	refreshSets := widget.NewButtonWithIcon(tr("routes.ruleSetsRefresh"), theme.ViewRefreshIcon(), v.refreshSets)
	v.setsNote = widget.NewLabel("")
	v.setsNote.Wrapping = fyne.TextWrapWord
	v.setsNote.TextStyle.Italic = true
	v.setsNote.Hide()
	importSet := widget.NewButtonWithIcon(tr("routes.ruleSetImport"), theme.FolderOpenIcon(), func() {
		dialog.ShowFileOpen(func(r fyne.URIReadCloser, err error) {
			if err != nil || r == nil {
				return
			}
			defer r.Close()
			b, err := io.ReadAll(io.LimitReader(r, plan.MaxRuleSetData+1))
			if err != nil {
				v.note.SetText(tr("profiles.fileReadFailed", M{"Err": err.Error()}))
				return
			}
			if _, err := ruleset.Parse(setFormat.Selected, b); err != nil {
				v.note.SetText(tr("routes.ruleSetBad", M{"Format": setFormat.Selected, "Err": err.Error()}))
				return
			}
			if strings.TrimSpace(setName.Text) == "" {
				setName.SetText(strings.TrimSuffix(r.URI().Name(), r.URI().Extension()))
			}
			addSet(b)
		}, v.u.win)
	})
	// Name and URL take a line of their own: beside the buttons they were
	// cut to a few letters at 800 px.
	setsRow := container.NewVBox(
		container.NewGridWithColumns(2, setName, setURL),
		container.NewBorder(nil, nil, nil, container.NewHBox(addSetURL, importSet, refreshSets), setFormat),
		v.setsNote)
	return setsRow
}

// setProfile shows p.
func (v *routesView) setProfile(p *profile.Profile) {
	v.p = p
	if v.selGroup >= len(p.Groups) {
		v.selGroup = -1
	}
	if v.selGroup < 0 && len(p.Groups) > 0 {
		v.selGroup = 0
	}
	shown := len(preset.List()) // custom
	if len(p.Routes.Rules) == 0 {
		shown = 0 // no rule: everything through the proxy
	}
	which := preset.Which(&p.Routes)
	for i, pr := range preset.List() {
		if which == pr.Name {
			shown = i
		}
	}
	v.preset.SetSelectedIndex(shown)
	sub := 0
	for i, m := range subRulesModes {
		if m == p.Routes.SubscriptionRules {
			sub = i
		}
	}
	v.subRules.SetSelectedIndex(sub)
	v.setTargets()
	v.rt, v.running = v.u.currentRoute(), v.u.status().State == core.Running
	v.rows = v.ruleRows(p, v.rt)
	v.groupList.Refresh()
	v.memberList.Refresh()
	v.noRules.Hidden = len(v.rows) > 0
	v.noRules.Refresh()
	v.ruleList.Refresh()
}

func (v *routesView) group() *profile.Group {
	if v.selGroup < 0 || v.selGroup >= len(v.p.Groups) {
		return nil
	}
	return v.p.Groups[v.selGroup]
}

func (v *routesView) members() []string {
	if g := v.group(); g != nil {
		return g.Members
	}
	return nil
}

// update pulls live group state from the core. The core runs a group
// (core.TargetProxy) over the route's servers, and one for each group that
// rules send flows to: the selected group's live state is the route's when
// that group is the route in use, else the rules' group it became.
func (v *routesView) update() {
	v.live, v.current = nil, ""
	v.rt, v.running = v.u.currentRoute(), v.u.status().State == core.Running
	rt := v.rt
	if g := v.group(); g != nil {
		name := v.groupLive(g.ID)
		if gs := v.u.liveGroup(name); name != "" && gs != nil {
			v.live, v.current = gs.Members, gs.Current
		}
		if name == core.TargetProxy && v.live == nil && len(rt.nodes) == 1 {
			v.current = rt.nodes[0].Name // one usable server: no group, no probes
		}
	}
	v.switches = v.u.Switches()
	// The rows follow the rule sets' running state (a download came or
	// failed) and the route (which targets run): rebuilt when either
	// changed. The targets' live state is read as the rows are drawn.
	changed := false
	if seen := fmt.Sprint(v.u.status().RuleSets, rt.targets, rt.sub); seen != v.setsSeen {
		v.setsSeen, changed = seen, true
		v.rows = v.ruleRows(v.p, rt)
	}
	if changed || v.running {
		v.ruleList.Refresh()
		v.groupList.Refresh()
	}
	if len(v.p.Groups) == 0 {
		v.note.SetText(tr("routes.noGroups"))
	} else if len(v.switches) == 0 {
		v.note.SetText(tr("routes.noSwitches"))
	} else {
		v.note.SetText("")
	}
	v.memberList.Refresh()
	v.switchLog.Refresh()
}

// refreshSets downloads the running rule sets now (api.Backend
// RefreshRuleSets) and says how it went; the rows follow the new states.
func (v *routesView) refreshSets() {
	v.setsNote.SetText(tr("routes.ruleSetsRefreshing"))
	v.setsNote.Show()
	var states []core.RuleSetState
	var err error
	v.u.background(func(ctx context.Context) {
		states, err = v.u.b.RefreshRuleSets(ctx, nil)
	}, func() {
		switch {
		case api.IsCode(err, api.CodeNotFound):
			v.setsNote.SetText(tr("routes.ruleSetsNotRunning"))
		case err != nil:
			v.setsNote.SetText(tr("routes.ruleSetsRefreshFailed", M{"Err": err.Error()}))
		default:
			failed := 0
			for _, st := range states {
				if st.Err != "" {
					failed++
				}
			}
			v.setsNote.SetText(tr("routes.ruleSetsRefreshed", M{"OK": len(states) - failed, "Failed": failed}))
		}
	})
}

// groupLive is the core's target that profile group id runs as: the
// route's (core.TargetProxy), a rule target's name, or "" when the run
// does not use it.
func (v *routesView) groupLive(id string) string {
	if !v.running {
		return ""
	}
	if v.rt.groupID == id {
		return core.TargetProxy
	}
	return v.rt.targets[id]
}

// targetState says how the core's target name stands: the member carrying
// its flows and that member's health and latency, as the member list
// says them (whole: all the member list says, and the error chain).
func (v *routesView) targetState(name string, whole bool) string {
	g := v.u.liveGroup(name)
	if g == nil {
		// One server, not a group: no probes.
		if name == core.TargetProxy && len(v.rt.nodes) == 1 {
			name = v.rt.nodes[0].Name
		}
		return "▶ " + name
	}
	if g.Current == "" {
		return tr("home.noUsableServer")
	}
	d := detailBrief
	if whole {
		d = detailWhole
	}
	return "▶ " + g.Current + " · " + memberHealth(g.Members, g.Current, d)
}

// switchGroup names the group of a switch: the route's by its name, a
// rule target's as the core names it (the group's).
func (v *routesView) switchGroup(name string) string {
	if name == core.TargetProxy && v.rt.name != "" {
		return v.rt.name
	}
	return name
}

// rowText is a rule row's text with the live state of its target (whole:
// for the details view).
func (v *routesView) rowText(row ruleRow, whole bool) string {
	if row.target == "" {
		return row.text
	}
	return tr("routes.ruleLive", M{"Rule": row.text, "State": v.targetState(row.target, whole)})
}

// healthOf describes a member's live state; whole adds the core's own
// words for its last failure (the error chain), for a details view.
func (v *routesView) healthOf(name string, whole bool) string {
	d := detailRow
	if whole {
		d = detailWhole
	}
	if s := memberHealth(v.live, name, d); s != "" {
		return s
	}
	if v.current == name {
		return tr("routes.carrying")
	}
	return tr("routes.notInUse")
}

// How much of a member's live state memberHealth says.
type detail int

const (
	detailBrief detail = iota // health, throttling, latency: a rule's or a group's row
	detailRow                 // and the last failure in words, and when it was checked: a member's row
	detailWhole               // and the core's own words for the failure: a details view
)

// memberHealth describes member name's live state among ms ("" when it
// is none of them), as much as d says.
func memberHealth(ms []group.MemberState, name string, d detail) string {
	for _, m := range ms {
		if m.Name != name {
			continue
		}
		s := healthLabel(m.Health)
		if m.Throttled {
			s += " · " + tr("health.throttled")
		}
		if m.RTT > 0 {
			s += " · " + tr("unit.ms", M{"N": m.RTT.Milliseconds()})
		}
		if d == detailBrief {
			return s
		}
		if m.LastError != "" {
			s += " · " + faultWords(m.Fault, m.LastError)
		}
		if !m.LastCheck.IsZero() {
			s += " · " + tr("routes.checkedAgo", M{"Age": ageString(time.Now(), m.LastCheck)})
		}
		if d == detailWhole && m.LastError != "" {
			s += "\n\n" + m.LastError
		}
		return s
	}
	return ""
}

// sayNote shows msg in the view's note (a pick's outcome).
func (v *routesView) sayNote(msg string, bad bool) {
	v.note.SetText(msg)
	v.note.Importance = widget.MediumImportance
	if bad {
		v.note.Importance = widget.DangerImportance
	}
	v.note.Refresh()
}

// move moves member i of the selected group by delta places and saves.
func (v *routesView) move(i, delta int) {
	g := v.group()
	if g == nil {
		return
	}
	j := i + delta
	if j < 0 || j >= len(g.Members) {
		return
	}
	id := g.ID
	v.u.update(func(p *profile.Profile) error { p.MoveMember(id, i, j); return nil })
}

// makeGroups makes the groups an import makes by itself
// (subscription.ApplyGroups) for the nodes added by hand; a subscription's
// are made when it is imported and on every refresh.
func (v *routesView) makeGroups() {
	before, after := 0, 0
	v.u.update(func(p *profile.Profile) error {
		before = len(p.Groups)
		subscription.ApplyGroups(p, "", nil)
		after = len(p.Groups)
		return nil
	})
	if after <= before {
		v.note.SetText(tr("routes.nothingToGroup"))
	} else {
		v.note.SetText(trN("routes.madeGroups", after-before))
	}
}

// onPreset replaces the rules with the expansion of the preset shown at
// index i (core/preset's, then "custom"), which the list then shows rule
// by rule for editing. Rules the user wrote (no preset's expansion) are
// replaced only after a confirmation.
func (v *routesView) onPreset(i int) {
	list := preset.List()
	if i < 0 || i >= len(list) {
		return // custom: the rules stay as they are
	}
	name, title := list[i].Name, presetTitle(list[i].Name)
	current := preset.Which(&v.p.Routes)
	if name == "" || name == current || (name == preset.Everything && len(v.p.Routes.Rules) == 0) {
		return
	}
	apply := func() {
		v.u.update(func(p *profile.Profile) error {
			r, err := preset.Routes(name, p.Routes.SubscriptionRules)
			if err == nil {
				p.Routes = r
			}
			return err
		})
	}
	if current == "" && len(v.p.Routes.Rules) > 0 && v.u.win != nil {
		dialog.ShowConfirm(tr("routes.replaceTitle"),
			trN("routes.replaceText", len(v.p.Routes.Rules), M{"Preset": title}),
			func(ok bool) {
				if ok {
					apply()
				} else {
					v.setProfile(v.p)
				}
			}, v.u.win)
		return
	}
	apply()
}

func (v *routesView) removeRule(i int) {
	v.u.update(func(p *profile.Profile) error { p.RemoveRule(i); return nil })
}

// maxTargetChoices bounds the editor's list of targets: a menu of
// thousands of servers takes seconds to open; typing narrows it.
const maxTargetChoices = 200

// setTargets lists the editor's targets: those the core accepts for the
// profile shown (plan.RuleTargets), the one picked kept (else direct).
func (v *routesView) setTargets() {
	picked := core.TargetDirect
	if i, ok := v.targetIndex[v.target.Text]; ok {
		picked = v.targets[i].ID
	}
	v.targets = plan.RuleTargets(v.p)
	v.targetLabels = make([]string, len(v.targets))
	v.targetIndex = make(map[string]int, len(v.targets))
	at := 0
	for i, t := range v.targets {
		l := v.targetLabel(t)
		// A label names one target: the text says which is picked.
		for n := 2; ; n++ {
			if _, taken := v.targetIndex[l]; !taken {
				break
			}
			l = fmt.Sprintf("%s (%d)", v.targetLabel(t), n)
		}
		v.targetLabels[i], v.targetIndex[l] = l, i
		if t.ID == picked {
			at = i
		}
	}
	if l := v.targetLabels[at]; v.target.Text != l {
		v.target.SetText(l) // OnChanged filters the list
	} else {
		v.filterTargets(l)
	}
}

// filterTargets offers the targets whose words contain text (any case),
// at most maxTargetChoices; a target's whole label (one picked) offers
// them all again.
func (v *routesView) filterTargets(text string) {
	var shown []string
	_, whole := v.targetIndex[text]
	needle := strings.ToLower(strings.TrimSpace(text))
	for _, l := range v.targetLabels {
		if len(shown) == maxTargetChoices {
			break
		}
		if whole || strings.Contains(strings.ToLower(l), needle) {
			shown = append(shown, l)
		}
	}
	v.targetShown = shown
	v.target.SetOptions(shown)
}

// targetLabel is how the editor offers target t.
func (v *routesView) targetLabel(t plan.RuleTarget) string {
	from := ""
	if s := v.p.Subscription(t.Subscription); s != nil {
		from = subscriptionTitle(v.p, s)
	}
	switch {
	case t.Kind == plan.TargetKindGroup && from != "":
		return tr("routes.targetGroupFrom", M{"Name": t.Name, "From": from})
	case t.Kind == plan.TargetKindGroup:
		return tr("routes.targetGroup", M{"Name": t.Name})
	case t.Kind == plan.TargetKindNode && from != "":
		return tr("routes.targetNodeFrom", M{"Name": t.Name, "From": from})
	case t.Kind == plan.TargetKindNode:
		return tr("routes.targetNode", M{"Name": t.Name})
	}
	return v.targetName(t.ID)
}

// targetName shows a rule's target by name.
func (v *routesView) targetName(t string) string {
	switch t {
	case targetDirect:
		return tr("routes.targetDirect")
	case targetBlock:
		return tr("routes.targetBlock")
	case "", core.TargetProxy:
		return tr("routes.targetProxy")
	}
	if g := v.p.Group(t); g != nil {
		return g.Name
	}
	if n := v.p.Node(t); n != nil {
		return n.Name()
	}
	return t
}

// groupTypeLabel is how a group's type is shown.
func groupTypeLabel(t string) string { return trKey(groupTypeKeys, t, t) }

var groupTypeKeys = map[string]string{
	profile.GroupFailover: "group.failover",
	profile.GroupSelector: "group.selector",
	profile.GroupURLTest:  "group.urltest",
}

// healthLabel is how a member's health is shown.
func healthLabel(h group.Health) string { return trKey(healthKeys, h, tr("health.untried")) }

var healthKeys = map[group.Health]string{
	group.Healthy:    "health.healthy",
	group.Failing:    "health.failing",
	group.Recovering: "health.recovering",
}
