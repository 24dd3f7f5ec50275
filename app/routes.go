package app

import (
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
	"github.com/skiffvpn/skiff/core/group"
	"github.com/skiffvpn/skiff/core/plan"
	"github.com/skiffvpn/skiff/core/preset"
	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/core/ruleset"
)

// Rule presets (core/preset lists the others).
const (
	presetCustom   = "Custom rules"
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
	user   int  // index in the user's rules; -1: a subscription's
}

// How the subscriptions' own rules combine with the user's.
var (
	subRulesChoices = []string{"Subscription rules after mine", "Subscription rules before mine", "Subscription rules not used"}
	subRulesModes   = map[string]string{
		subRulesChoices[0]: profile.SubRulesAfter,
		subRulesChoices[1]: profile.SubRulesFirst,
		subRulesChoices[2]: profile.SubRulesOff,
	}
)

// ruleRows lists p's rules as the rules list shows them.
func (v *routesView) ruleRows(p *profile.Profile) []ruleRow {
	var rows []ruleRow
	text := func(r profile.Rule) string {
		return fmt.Sprintf("%s %s → %s", r.Type, strings.Join(r.Values, ", "), v.targetName(r.Target))
	}
	for i, r := range p.Routes.Rules {
		rows = append(rows, ruleRow{text: text(r), user: i})
	}
	for _, rs := range p.Routes.RuleSets {
		from := rs.URL
		if from == "" {
			from = fmt.Sprintf("imported, %d KiB", (len(rs.Data)+1023)>>10)
		}
		rows = append(rows, ruleRow{text: fmt.Sprintf("rule set %s (%s): %s", rs.Name, rs.Format, from), user: -1})
	}
	for _, sub := range p.Subscriptions {
		sr := sub.Routes
		if sr == nil {
			continue
		}
		from := " (" + sub.DisplayName() + ")"
		off := p.Routes.SubscriptionRules == profile.SubRulesOff
		for _, r := range sr.Rules {
			rows = append(rows, ruleRow{text: text(r) + from, greyed: off, user: -1})
		}
		if sr.Final != "" {
			rows = append(rows, ruleRow{text: "final → " + v.targetName(sr.Final) + from, greyed: off, user: -1})
		}
		for _, g := range sr.Greyed {
			rows = append(rows, ruleRow{text: g.Rule + " — not used: " + g.Reason + from, greyed: true, user: -1})
		}
	}
	return rows
}

// presetTitles are the preset chooser's entries: core/preset's, then
// presetCustom.
func presetTitles() []string {
	var out []string
	for _, p := range preset.List() {
		out = append(out, p.Title)
	}
	return append(out, presetCustom)
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
	subRules   *widget.Select
	rows       []ruleRow // the user's rules, then the subscriptions' (used and greyed)

	p        *profile.Profile
	selGroup int
	live     []group.MemberState
	current  string
	switches []group.Event
}

func newRoutesView(u *UI) *routesView {
	v := &routesView{u: u, p: profile.New(), selGroup: -1}
	v.groupList = widget.NewList(
		func() int { return len(v.p.Groups) },
		func() fyne.CanvasObject { return widget.NewLabel("group name") },
		func(i widget.ListItemID, o fyne.CanvasObject) {
			g := v.p.Groups[i]
			s := fmt.Sprintf("%s (%s, %d)", g.Name, g.Type, len(g.Members))
			if v.p.Selected == g.ID {
				s = "● " + s
			}
			o.(*widget.Label).SetText(s)
		},
	)
	v.groupList.OnSelected = func(i widget.ListItemID) { v.selGroup = i; v.update(); v.memberList.Refresh() }
	v.memberList = widget.NewList(
		func() int { return len(v.members()) },
		func() fyne.CanvasObject {
			name := widget.NewLabel("member")
			name.Truncation = fyne.TextTruncateEllipsis
			health := widget.NewLabel("health")
			health.Truncation = fyne.TextTruncateEllipsis
			health.TextStyle.Italic = true
			up := widget.NewButtonWithIcon("", theme.MoveUpIcon(), nil)
			down := widget.NewButtonWithIcon("", theme.MoveDownIcon(), nil)
			return container.NewBorder(nil, nil, nil, container.NewHBox(up, down), container.NewVBox(name, health))
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
				label, proto = g.Name, "group"
			}
			prefix := fmt.Sprintf("%d. ", i+1)
			if label == v.current && v.current != "" {
				prefix = "▶ "
			}
			name.SetText(prefix + label + "  ·  " + proto)
			health.SetText(v.healthOf(label))
			btns.Objects[0].(*widget.Button).OnTapped = func() { v.move(i, -1) }
			btns.Objects[1].(*widget.Button).OnTapped = func() { v.move(i, +1) }
		},
	)
	v.switchLog = widget.NewList(
		func() int { return len(v.switches) },
		func() fyne.CanvasObject {
			l := widget.NewLabel("switch")
			l.Truncation = fyne.TextTruncateEllipsis
			return l
		},
		func(i widget.ListItemID, o fyne.CanvasObject) {
			e := v.switches[len(v.switches)-1-i] // newest first
			from, to := e.From, e.To
			if from == "" {
				from = "none"
			}
			if to == "" {
				to = "none"
			}
			o.(*widget.Label).SetText(fmt.Sprintf("%s  %s: %s → %s — %s", e.Time.Local().Format("15:04:05"), e.Group, from, to, e.Reason))
		},
	)
	v.note = widget.NewLabel("")
	v.note.Wrapping = fyne.TextWrapWord
	v.note.TextStyle.Italic = true

	makeGroups := widget.NewButtonWithIcon("Make failover groups", theme.ContentAddIcon(), v.makeGroups)
	useGroup := widget.NewButtonWithIcon("Use this group", theme.ConfirmIcon(), func() {
		if g := v.group(); g != nil {
			id := g.ID
			v.u.update(func(p *profile.Profile) error { p.Selected = id; return nil })
		}
	})
	removeGroup := widget.NewButtonWithIcon("", theme.DeleteIcon(), func() {
		if g := v.group(); g != nil {
			id := g.ID
			v.selGroup = -1
			v.u.update(func(p *profile.Profile) error {
				gs := p.Groups[:0]
				for _, g := range p.Groups {
					if g.ID != id {
						gs = append(gs, g)
					}
				}
				p.Groups = gs
				p.Prune()
				return nil
			})
		}
	})

	// Rules.
	v.preset = widget.NewSelect(presetTitles(), v.onPreset)
	v.ruleList = widget.NewList(
		func() int { return len(v.rows) },
		func() fyne.CanvasObject {
			l := widget.NewLabel("rule")
			l.Truncation = fyne.TextTruncateEllipsis
			return container.NewBorder(nil, nil, nil, widget.NewButtonWithIcon("", theme.DeleteIcon(), nil), l)
		},
		func(i widget.ListItemID, o fyne.CanvasObject) {
			row := v.rows[i]
			box := o.(*fyne.Container)
			l := box.Objects[0].(*widget.Label)
			l.SetText(row.text)
			l.Importance = widget.MediumImportance
			if row.greyed {
				l.Importance = widget.LowImportance
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
	v.subRules = widget.NewSelect(subRulesChoices, func(s string) {
		mode := subRulesModes[s]
		if mode == v.p.Routes.SubscriptionRules || (mode == profile.SubRulesAfter && v.p.Routes.SubscriptionRules == "") {
			return
		}
		v.u.update(func(p *profile.Profile) error { p.Routes.SubscriptionRules = mode; return nil })
	})
	kind := widget.NewSelect(ruleTypes, nil)
	kind.SetSelected(ruleTypeCustom)
	values := widget.NewEntry()
	values.SetPlaceHolder("example.com, 10.0.0.0/8 …")
	target := widget.NewSelect([]string{targetDirect, targetBlock, "proxy"}, nil)
	target.SetSelected(targetDirect)
	addRule := widget.NewButtonWithIcon("Add rule", theme.ContentAddIcon(), func() {
		var vals []string
		for _, s := range strings.Split(values.Text, ",") {
			if s = strings.TrimSpace(s); s != "" {
				vals = append(vals, s)
			}
		}
		if len(vals) == 0 && kind.Selected != "private" {
			v.note.SetText("A rule needs at least one value (a domain, an address range or a port).")
			return
		}
		t := target.Selected
		values.SetText("")
		v.u.update(func(p *profile.Profile) error {
			p.Routes.Rules = append(p.Routes.Rules, profile.Rule{Type: kind.Selected, Values: vals, Target: t})
			return nil
		})
	})

	// Rule sets: by URL, or a file imported here (its content is saved;
	// the service never reads a path).
	setName := widget.NewEntry()
	setName.SetPlaceHolder("rule set name")
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
			v.note.SetText("Rule set not added: " + err.Error())
			return
		}
		v.note.SetText(fmt.Sprintf("Rule set %q added: add a rule_set rule naming it.", rs.Name))
		setName.SetText("")
		setURL.SetText("")
	}
	addSetURL := widget.NewButtonWithIcon("Add", theme.ContentAddIcon(), func() { addSet(nil) })
	importSet := widget.NewButtonWithIcon("Import…", theme.FolderOpenIcon(), func() {
		dialog.ShowFileOpen(func(r fyne.URIReadCloser, err error) {
			if err != nil || r == nil {
				return
			}
			defer r.Close()
			b, err := io.ReadAll(io.LimitReader(r, plan.MaxRuleSetData+1))
			if err != nil {
				v.note.SetText("Could not read the file: " + err.Error())
				return
			}
			if _, err := ruleset.Parse(setFormat.Selected, b); err != nil {
				v.note.SetText("Not a " + setFormat.Selected + " rule set: " + err.Error())
				return
			}
			if strings.TrimSpace(setName.Text) == "" {
				setName.SetText(strings.TrimSuffix(r.URI().Name(), r.URI().Extension()))
			}
			addSet(b)
		}, v.u.win)
	})
	setsRow := container.NewBorder(nil, nil, nil, container.NewHBox(setFormat, addSetURL, importSet), container.NewGridWithColumns(2, setName, setURL))

	groupsPane := container.NewBorder(
		container.NewHBox(widget.NewLabelWithStyle("Failover groups", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}), makeGroups),
		container.NewHBox(useGroup, removeGroup), nil, nil, v.groupList)
	membersPane := container.NewBorder(widget.NewLabelWithStyle("Members in order (live health, last RTT)", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}),
		nil, nil, nil, v.memberList)
	top := container.NewHSplit(groupsPane, membersPane)
	top.Offset = 0.4
	logPane := container.NewBorder(container.NewVBox(widget.NewLabelWithStyle("Switch log", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}), v.note), nil, nil, nil, v.switchLog)
	editor := container.NewVBox(
		container.NewGridWithColumns(2, kind, target),
		container.NewBorder(nil, nil, nil, addRule, values),
		setsRow,
	)
	rulesPane := container.NewBorder(
		container.NewVBox(container.NewBorder(nil, nil, widget.NewLabelWithStyle("Rules", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}), nil, v.preset), v.subRules, editor),
		nil, nil, nil, v.ruleList)
	bottom := container.NewHSplit(logPane, rulesPane)
	bottom.Offset = 0.4
	all := container.NewVSplit(top, bottom)
	all.Offset = 0.5
	v.obj = container.NewPadded(all)
	v.update()
	return v
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
	for i, c := range subRulesChoices {
		if subRulesModes[c] == p.Routes.SubscriptionRules {
			sub = i
		}
	}
	v.subRules.SetSelectedIndex(sub)
	v.rows = v.ruleRows(p)
	v.groupList.Refresh()
	v.memberList.Refresh()
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

// update pulls live group state from the core. The core runs one failover
// group (core.TargetProxy) over the route's servers; it is the selected
// group's live state when that group is the route in use.
func (v *routesView) update() {
	v.live, v.current = nil, ""
	rt := v.u.currentRoute()
	if g := v.group(); g != nil && rt.groupID == g.ID {
		for _, gs := range v.u.groups() {
			v.live, v.current = gs.Members, gs.Current
		}
		if v.live == nil && v.u.status().State == core.Running && len(rt.nodes) == 1 {
			v.current = rt.nodes[0].Name // one usable server: no group, no probes
		}
	}
	v.switches = v.u.Switches()
	if len(v.p.Groups) == 0 {
		v.note.SetText("No failover group yet. \"Make failover groups\" makes one for every server your subscriptions offer over several protocols (Hysteria2 first, VLESS+WS+TLS second).")
	} else if len(v.switches) == 0 {
		v.note.SetText("No switch yet: the first member in order carries traffic while it is healthy.")
	} else {
		v.note.SetText("")
	}
	v.memberList.Refresh()
	v.switchLog.Refresh()
}

// healthOf describes a member's live state.
func (v *routesView) healthOf(name string) string {
	for _, m := range v.live {
		if m.Name != name {
			continue
		}
		s := m.Health.String()
		if m.RTT > 0 {
			s += fmt.Sprintf(" · %d ms", m.RTT.Milliseconds())
		}
		if m.LastError != "" {
			s += " · " + m.LastError
		}
		if !m.LastCheck.IsZero() {
			s += " · checked " + ageString(time.Now(), m.LastCheck) + " ago"
		}
		return s
	}
	if v.current == name {
		return "carrying traffic"
	}
	return "not in use"
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
	v.u.update(func(p *profile.Profile) error {
		if g := p.Group(id); g != nil && j < len(g.Members) && i < len(g.Members) {
			g.Members[i], g.Members[j] = g.Members[j], g.Members[i]
		}
		return nil
	})
}

// makeGroups adds the default failover groups the profile's nodes suggest.
func (v *routesView) makeGroups() {
	added := 0
	v.u.update(func(p *profile.Profile) error {
		gs := defaultGroups(p)
		added = len(gs)
		p.Groups = append(p.Groups, gs...)
		return nil
	})
	if added == 0 {
		v.note.SetText("No server is offered over several protocols, so there is no failover group to make. Add a subscription on Profiles.")
	} else {
		v.note.SetText(fmt.Sprintf("Made %d failover group(s): Hysteria2 first, VLESS+WS+TLS second.", added))
	}
}

// onPreset replaces the rules with the chosen preset's expansion, which
// the list then shows rule by rule for editing. Rules the user wrote
// (no preset's expansion) are replaced only after a confirmation.
func (v *routesView) onPreset(title string) {
	var name string
	for _, pr := range preset.List() {
		if pr.Title == title {
			name = pr.Name
		}
	}
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
		dialog.ShowConfirm("Replace the rules?",
			fmt.Sprintf("%q replaces your %d rules with its own; you can edit them afterwards.", title, len(v.p.Routes.Rules)),
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
	v.u.update(func(p *profile.Profile) error {
		if i < len(p.Routes.Rules) {
			p.Routes.Rules = append(p.Routes.Rules[:i], p.Routes.Rules[i+1:]...)
		}
		return nil
	})
}

// targetName shows a rule's target by name.
func (v *routesView) targetName(t string) string {
	switch t {
	case targetDirect, targetBlock:
		return t
	case "", core.TargetProxy:
		return "proxy"
	}
	if g := v.p.Group(t); g != nil {
		return g.Name
	}
	if n := v.p.Node(t); n != nil {
		return n.Name()
	}
	return t
}
