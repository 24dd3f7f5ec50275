package window

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/plan"
	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/internal/i18n"
	"github.com/skiffvpn/skiff/internal/version"
)

// refreshChoices are the subscription refresh intervals offered.
var refreshChoices = []time.Duration{time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour, 72 * time.Hour}

func refreshLabels() []string {
	out := make([]string, len(refreshChoices))
	for i, d := range refreshChoices {
		out[i] = trN("settings.everyHours", int(d.Hours()))
	}
	return out
}

// settingsView edits the preferences and the profile's settings.
type settingsView struct {
	u   *UI
	obj fyne.CanvasObject

	startLogin, startConn *widget.Check
	resume                *widget.Check // the profile's ConnectAtStart
	closeOnSwitch         *widget.Check // the profile's CloseOnSwitch
	listen                *widget.Entry
	proxyUser, proxyPass  *widget.Entry // the profile's Settings.Proxy
	strict, ipv6          *widget.Check
	killSwitch            *widget.Check
	mtu                   *widget.Entry
	dns                   *widget.Select
	probe                 *widget.Entry
	refresh, themeSel     *widget.Select
	langSel               *widget.Select
	status                *widget.Label
	marked                map[*widget.Entry]string // the fields the last Save found bad, and why
}

// themes are the Theme choices in the order shown.
var themes = []string{ThemeSystem, ThemeLight, ThemeDark}

func themeLabels() []string {
	return []string{tr("settings.themeSystem"), tr("settings.themeLight"), tr("settings.themeDark")}
}

// languageLabels are the Language choices: the system's, then each
// bundle under its own name (i18n.Languages' order).
func languageLabels() []string {
	out := []string{tr("settings.languageSystem", M{"Name": i18n.Match(systemLocales()...).Name})}
	for _, l := range i18n.Languages {
		out = append(out, l.Name)
	}
	return out
}

// indexOf returns where s is in list, or 0.
func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return 0
}

func newSettingsView(u *UI) *settingsView {
	v := &settingsView{u: u}
	v.startLogin = widget.NewCheck(tr("settings.startOnLogin"), nil)
	v.showLogin()
	v.startConn = widget.NewCheck(tr("settings.startConnected"), nil)
	v.resume = widget.NewCheck(tr("settings.connectAtStart"), nil)
	v.closeOnSwitch = widget.NewCheck(tr("settings.closeOnSwitch"), nil)
	v.listen = widget.NewEntry()
	v.listen.SetPlaceHolder("127.0.0.1:1080")
	v.proxyUser = widget.NewEntry()
	v.proxyUser.SetPlaceHolder(tr("settings.proxyUser"))
	v.proxyPass = widget.NewPasswordEntry()
	v.proxyPass.SetPlaceHolder(tr("settings.proxyPassword"))
	authHint := widget.NewLabel(tr("settings.proxyAuthHint"))
	authHint.Wrapping = fyne.TextWrapWord
	authHint.TextStyle.Italic = true
	v.strict = widget.NewCheck(tr("settings.strictRoute"), nil)
	v.ipv6 = widget.NewCheck(tr("settings.ipv6"), nil)
	v.killSwitch = widget.NewCheck(tr("settings.killSwitch"), nil)
	v.mtu = widget.NewEntry()
	v.mtu.SetPlaceHolder(tr("settings.mtuDefault", M{"MTU": 9000}))
	v.dns = widget.NewSelect([]string{"fake-ip", "real-ip"}, nil)
	v.probe = widget.NewEntry()
	v.probe.SetPlaceHolder(defaultProbeURL)
	v.refresh = widget.NewSelect(refreshLabels(), nil)
	v.themeSel = widget.NewSelect(themeLabels(), nil)
	v.langSel = widget.NewSelect(languageLabels(), nil)
	v.status = widget.NewLabel("")
	v.status.Wrapping = fyne.TextWrapWord
	save := widget.NewButtonWithIcon(tr("settings.save"), theme.DocumentSaveIcon(), v.save)
	save.Importance = widget.HighImportance

	tunNote := widget.NewLabel("")
	tunNote.Wrapping = fyne.TextWrapWord
	tunNote.TextStyle.Italic = true
	if ok, why := tunAvailable(); !ok {
		tunNote.SetText(why)
	} else {
		tunNote.Hide()
	}
	form := widget.NewForm(
		widget.NewFormItem(tr("settings.startup"), container.NewVBox(v.startLogin, v.startConn, v.resume)),
		widget.NewFormItem(tr("settings.switching"), v.closeOnSwitch),
		widget.NewFormItem(tr("settings.listen"), v.listen),
		widget.NewFormItem(tr("settings.proxyAuth"), container.NewVBox(v.proxyUser, v.proxyPass, authHint)),
		widget.NewFormItem(tr("settings.tun"), container.NewVBox(v.strict, v.ipv6, v.killSwitch, tunNote)),
		widget.NewFormItem(tr("settings.mtu"), v.mtu),
		widget.NewFormItem(tr("settings.dns"), v.dns),
		widget.NewFormItem(tr("settings.probeURL"), v.probe),
		widget.NewFormItem(tr("settings.refreshEvery"), v.refresh),
		widget.NewFormItem(tr("settings.language"), v.langSel),
		widget.NewFormItem(tr("settings.theme"), v.themeSel),
		widget.NewFormItem(tr("settings.version"), widget.NewLabel(tr("settings.versionText", M{"Version": version.Get().String()}))),
	)
	// The outcome of Save (and every error found) is above the form, in
	// sight whatever the scroll.
	v.obj = container.NewPadded(container.NewBorder(v.status, nil, nil, nil, container.NewVScroll(container.NewVBox(form, container.NewHBox(save)))))
	v.status.Hide()
	for _, e := range []*widget.Entry{v.listen, v.mtu, v.probe, v.proxyUser} {
		e.Validator = func(string) error { return nil } // typing clears the mark a Save put
		e.AlwaysShowValidationError = true
	}
	v.showPrefs(u.Prefs())
	// Language and theme apply when picked.
	v.themeSel.OnChanged = func(string) { v.applyLook() }
	v.langSel.OnChanged = func(string) { v.applyLook() }
	return v
}

// applyLook saves and applies the theme and language shown.
func (v *settingsView) applyLook() {
	old := v.u.Prefs()
	p := old
	if i := v.themeSel.SelectedIndex(); i >= 0 {
		p.Theme = themes[i]
	}
	p.Language = ""
	if i := v.langSel.SelectedIndex(); i > 0 {
		p.Language = i18n.Languages[i-1].Code
	}
	if p.Theme == old.Theme && p.Language == old.Language {
		return
	}
	if err := v.u.setPrefs(p); err != nil {
		v.say(err.Error(), true)
		return
	}
	if p.Language != old.Language {
		v.u.relabel() // the views are built again in the new language
	}
}

func (v *settingsView) showPrefs(p Prefs) {
	v.startConn.SetChecked(p.StartConnected)
	v.listen.SetText(p.Listen)
	v.ipv6.SetChecked(p.IPv6)
	if p.DNSMode == "" {
		v.dns.SetSelected("fake-ip")
	} else {
		v.dns.SetSelected(p.DNSMode)
	}
	v.themeSel.SetSelectedIndex(indexOf(themes, p.Theme))
	v.langSel.SetSelectedIndex(0)
	for i, l := range i18n.Languages {
		if l.Code == p.Language {
			v.langSel.SetSelectedIndex(i + 1)
		}
	}
}

// setProfile shows the profile's settings.
func (v *settingsView) setProfile(p *profile.Profile) {
	s := p.Settings
	v.strict.SetChecked(s.TUN.Strict())
	v.killSwitch.SetChecked(s.TUN.KillSwitch)
	v.resume.SetChecked(s.ConnectAtStart)
	v.closeOnSwitch.SetChecked(s.CloseOnSwitch)
	if s.TUN.MTU > 0 {
		v.mtu.SetText(strconv.Itoa(s.TUN.MTU))
	} else {
		v.mtu.SetText("")
	}
	v.probe.SetText(s.ProbeURL)
	v.proxyUser.SetText(s.Proxy.Username)
	v.proxyPass.SetText(s.Proxy.Password)
	iv := time.Duration(s.RefreshInterval)
	if iv <= 0 {
		iv = 24 * time.Hour
	}
	v.refresh.SetSelectedIndex(len(refreshChoices) - 2) // 24 h
	for i, c := range refreshChoices {
		if c == iv {
			v.refresh.SetSelectedIndex(i)
		}
	}
}

// save checks and stores the settings.
func (v *settingsView) save() {
	old := v.u.Prefs()
	p := old
	p.StartConnected = v.startConn.Checked
	p.IPv6 = v.ipv6.Checked
	p.DNSMode = v.dns.Selected
	if i := v.themeSel.SelectedIndex(); i >= 0 {
		p.Theme = themes[i]
	}
	p.Language = ""
	if i := v.langSel.SelectedIndex(); i > 0 {
		p.Language = i18n.Languages[i-1].Code
	}
	// Every field is checked; every error is listed and its field marked.
	var errs []string
	bad := func(e *widget.Entry, msg string) {
		errs = append(errs, msg)
		e.SetValidationError(errors.New(msg))
		v.marked[e] = msg
	}
	for _, e := range []*widget.Entry{v.listen, v.mtu, v.probe, v.proxyUser} {
		e.SetValidationError(nil)
	}
	v.marked = map[*widget.Entry]string{}
	listen := strings.TrimSpace(v.listen.Text)
	if listen != "" {
		host, port, err := net.SplitHostPort(listen)
		if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
			bad(v.listen, tr("settings.listenInvalid"))
		} else if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			bad(v.listen, tr("settings.portInvalid"))
		}
	}
	p.Listen = listen
	mtu := 0
	if s := strings.TrimSpace(v.mtu.Text); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1280 || n > 65535 {
			bad(v.mtu, tr("settings.mtuInvalid"))
		}
		mtu = n
	}
	probe := strings.TrimSpace(v.probe.Text)
	if probe != "" && !strings.HasPrefix(probe, "http://") && !strings.HasPrefix(probe, "https://") {
		bad(v.probe, tr("settings.probeInvalid"))
	}
	proxy := profile.Proxy{Username: strings.TrimSpace(v.proxyUser.Text), Password: v.proxyPass.Text}
	if proxy.Username == "" {
		proxy.Password = "" // no username: authentication off
	}
	if err := plan.CheckProxy(proxy); err != nil {
		bad(v.proxyUser, tr("settings.proxyAuthInvalid", M{"Err": err.Error()}))
	}
	if len(errs) > 0 {
		v.say(strings.Join(errs, "\n"), true)
		return
	}
	iv := 24 * time.Hour
	if i := v.refresh.SelectedIndex(); i >= 0 {
		iv = refreshChoices[i]
	}
	if err := v.u.setPrefs(p); err != nil {
		v.say(err.Error(), true)
		return
	}
	if err := v.u.update(func(pr *profile.Profile) error {
		strict := v.strict.Checked
		pr.Settings.TUN.StrictRoute = &strict
		pr.Settings.TUN.KillSwitch = v.killSwitch.Checked
		pr.Settings.ConnectAtStart = v.resume.Checked
		pr.Settings.CloseOnSwitch = v.closeOnSwitch.Checked
		pr.Settings.TUN.MTU = mtu
		pr.Settings.ProbeURL = probe
		pr.Settings.Proxy = proxy
		pr.Settings.RefreshInterval = profile.Duration(iv)
		return nil
	}); err != nil {
		v.say(tr("error.saveProfile", M{"Err": err.Error()}), true)
		return
	}
	// The kill switch takes effect at once, either way: the service applies
	// the saved setting itself (as root); the core in this process needs
	// it done here.
	if !v.u.service {
		tc := core.TUNConfig{KillSwitch: v.killSwitch.Checked}
		if err := core.ApplyKillSwitch(&tc, "", nil, v.u.log); err != nil {
			v.say(tr("settings.killSwitchFailed", M{"Err": err.Error()}), true)
			return
		}
	}
	if p.Language != old.Language {
		v.u.relabel() // the views are built again in the new language
		v.u.settings.say(tr("settings.saved"), false)
		return
	}
	v.say(tr("settings.saved"), false)
}

func (v *settingsView) say(msg string, bad bool) {
	v.status.SetText(msg)
	v.status.Show()
	if bad {
		v.status.Importance = widget.DangerImportance
	} else {
		v.status.Importance = widget.SuccessImportance
	}
	v.status.Refresh()
}

// showLogin shows whether the tray starts at login, as the desktop has
// it (the login item is the desktop's, not a preference of the window's);
// the box applies a change at once, without Save. Without a login item
// (Options.Login nil) the box is disabled.
func (v *settingsView) showLogin() {
	c := v.startLogin
	c.OnChanged = nil
	on, err := false, error(nil)
	if v.u.login != nil {
		on, err = v.u.login.Enabled()
	}
	if err != nil {
		v.u.log.Warn("app: start at login", "err", err)
	}
	c.SetChecked(on)
	if v.u.login == nil {
		c.Disable()
		return
	}
	c.Enable()
	c.OnChanged = v.setLogin
}

// setLogin turns starting at login on or off, and shows the outcome.
func (v *settingsView) setLogin(on bool) {
	if err := v.u.login.Set(on); err != nil {
		v.say(tr("settings.loginFailed", M{"Err": err.Error()}), true)
	} else if on {
		v.say(tr("settings.loginOn"), false)
	} else {
		v.say(tr("settings.loginOff"), false)
	}
	v.showLogin()
}
