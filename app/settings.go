package app

import (
	"fmt"
	"image/color"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/internal/version"
)

// refreshChoices are the subscription refresh intervals offered.
var refreshChoices = []string{"1h", "6h", "12h", "24h", "72h"}

// settingsView edits the preferences and the profile's settings.
type settingsView struct {
	u   *UI
	obj fyne.CanvasObject

	startLogin, startConn *widget.Check
	resume                *widget.Check // the profile's ConnectAtStart
	listen                *widget.Entry
	strict, ipv6          *widget.Check
	killSwitch            *widget.Check
	mtu                   *widget.Entry
	dns                   *widget.Select
	probe                 *widget.Entry
	refresh, themeSel     *widget.Select
	status                *widget.Label
}

func newSettingsView(u *UI) *settingsView {
	v := &settingsView{u: u}
	v.startLogin = widget.NewCheck("Start Skiff when I log in", nil)
	v.startConn = widget.NewCheck("Connect when Skiff starts", nil)
	v.resume = widget.NewCheck("Reconnect when the computer starts, if connected when it stopped (the service)", nil)
	v.listen = widget.NewEntry()
	v.listen.SetPlaceHolder("127.0.0.1:1080")
	v.strict = widget.NewCheck("Strict route (no traffic around the tunnel)", nil)
	v.ipv6 = widget.NewCheck("Route IPv6 too", nil)
	v.killSwitch = widget.NewCheck("Block all traffic outside Skiff (kill switch; also while disconnected)", nil)
	v.mtu = widget.NewEntry()
	v.mtu.SetPlaceHolder("default (9000)")
	v.dns = widget.NewSelect([]string{"fake-ip", "real-ip"}, nil)
	v.probe = widget.NewEntry()
	v.probe.SetPlaceHolder(defaultProbeURL)
	v.refresh = widget.NewSelect(refreshChoices, nil)
	v.themeSel = widget.NewSelect([]string{ThemeSystem, ThemeLight, ThemeDark}, nil)
	v.status = widget.NewLabel("")
	v.status.Wrapping = fyne.TextWrapWord
	save := widget.NewButtonWithIcon("Save", theme.DocumentSaveIcon(), v.save)
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
		widget.NewFormItem("Startup", container.NewVBox(v.startLogin, v.startConn, v.resume)),
		widget.NewFormItem("Local proxy address", v.listen),
		widget.NewFormItem("TUN", container.NewVBox(v.strict, v.ipv6, v.killSwitch, tunNote)),
		widget.NewFormItem("TUN MTU", v.mtu),
		widget.NewFormItem("DNS mode", v.dns),
		widget.NewFormItem("Probe URL", v.probe),
		widget.NewFormItem("Refresh subscriptions every", v.refresh),
		widget.NewFormItem("Theme", v.themeSel),
		widget.NewFormItem("Version", widget.NewLabel("Skiff "+version.Get().String())),
	)
	v.obj = container.NewPadded(container.NewVScroll(container.NewVBox(form, container.NewHBox(save), v.status)))
	v.showPrefs(u.Prefs())
	return v
}

func (v *settingsView) showPrefs(p Prefs) {
	v.startLogin.SetChecked(p.StartOnLogin)
	v.startConn.SetChecked(p.StartConnected)
	v.listen.SetText(p.Listen)
	v.ipv6.SetChecked(p.IPv6)
	if p.DNSMode == "" {
		v.dns.SetSelected("fake-ip")
	} else {
		v.dns.SetSelected(p.DNSMode)
	}
	if p.Theme == "" {
		v.themeSel.SetSelected(ThemeSystem)
	} else {
		v.themeSel.SetSelected(p.Theme)
	}
}

// setProfile shows the profile's settings.
func (v *settingsView) setProfile(p *profile.Profile) {
	s := p.Settings
	v.strict.SetChecked(s.TUN.Strict())
	v.killSwitch.SetChecked(s.TUN.KillSwitch)
	v.resume.SetChecked(s.ConnectAtStart)
	if s.TUN.MTU > 0 {
		v.mtu.SetText(strconv.Itoa(s.TUN.MTU))
	} else {
		v.mtu.SetText("")
	}
	v.probe.SetText(s.ProbeURL)
	iv := time.Duration(s.RefreshInterval)
	if iv <= 0 {
		iv = 24 * time.Hour
	}
	v.refresh.SetSelected(strings.TrimSuffix(strings.TrimSuffix(iv.String(), "0s"), "0m"))
}

// save checks and stores the settings.
func (v *settingsView) save() {
	old := v.u.Prefs()
	p := old
	p.StartOnLogin = v.startLogin.Checked
	p.StartConnected = v.startConn.Checked
	p.IPv6 = v.ipv6.Checked
	p.DNSMode = v.dns.Selected
	p.Theme = v.themeSel.Selected
	listen := strings.TrimSpace(v.listen.Text)
	if listen != "" {
		host, port, err := net.SplitHostPort(listen)
		if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
			v.say("The local proxy address must be a loopback address and port, like 127.0.0.1:1080.", true)
			return
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			v.say("The local proxy port must be a number from 1 to 65535.", true)
			return
		}
	}
	p.Listen = listen
	mtu := 0
	if s := strings.TrimSpace(v.mtu.Text); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1280 || n > 65535 {
			v.say("The MTU must be a number from 1280 to 65535, or empty for the default.", true)
			return
		}
		mtu = n
	}
	probe := strings.TrimSpace(v.probe.Text)
	if probe != "" && !strings.HasPrefix(probe, "http://") && !strings.HasPrefix(probe, "https://") {
		v.say("The probe URL must start with http:// or https://.", true)
		return
	}
	iv, err := time.ParseDuration(v.refresh.Selected)
	if err != nil {
		iv = 24 * time.Hour
	}
	if err := v.u.setPrefs(p); err != nil {
		v.say(err.Error(), true)
		return
	}
	if p.StartOnLogin == old.StartOnLogin {
		// nothing to change in the desktop's autostart
	} else if err := setAutostart(p.StartOnLogin); err != nil {
		v.say("Saved, but starting on login could not be set up: "+err.Error(), true)
		return
	}
	if err := v.u.update(func(pr *profile.Profile) error {
		strict := v.strict.Checked
		pr.Settings.TUN.StrictRoute = &strict
		pr.Settings.TUN.KillSwitch = v.killSwitch.Checked
		pr.Settings.ConnectAtStart = v.resume.Checked
		pr.Settings.TUN.MTU = mtu
		pr.Settings.ProbeURL = probe
		pr.Settings.RefreshInterval = profile.Duration(iv)
		return nil
	}); err != nil {
		v.say("Could not save the profile: "+err.Error(), true)
		return
	}
	// The kill switch takes effect at once, either way: the service applies
	// the saved setting itself (as root); the core in this process needs
	// it done here.
	if !v.u.service {
		tc := core.TUNConfig{KillSwitch: v.killSwitch.Checked}
		if err := core.ApplyKillSwitch(&tc, "", nil, v.u.log); err != nil {
			v.say("Saved, but the kill switch could not be changed now (it needs the rights TUN mode needs): "+err.Error(), true)
			return
		}
	}
	v.say("Saved. The proxy address and TUN options apply the next time you connect.", false)
}

func (v *settingsView) say(msg string, bad bool) {
	v.status.SetText(msg)
	if bad {
		v.status.Importance = widget.DangerImportance
	} else {
		v.status.Importance = widget.SuccessImportance
	}
	v.status.Refresh()
}

// setAutostart adds or removes Skiff from the desktop's autostart (XDG on
// Linux and the BSDs).
func setAutostart(on bool) error {
	if runtime.GOOS == "windows" || runtime.GOOS == "darwin" {
		if on {
			return fmt.Errorf("not available on %s yet", runtime.GOOS)
		}
		return nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return err
	}
	path := filepath.Join(dir, "autostart", "skiff.desktop")
	if !on {
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			return err
		}
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	entry := "[Desktop Entry]\nType=Application\nName=Skiff\nComment=Skiff VPN\nExec=" + exe + "\nIcon=" + ID +
		"\nX-GNOME-Autostart-enabled=true\n"
	return os.WriteFile(path, []byte(entry), 0o644)
}

// applyTheme follows the system, or forces the user's light/dark choice.
func (u *UI) applyTheme() {
	switch u.Prefs().Theme {
	case ThemeLight:
		u.fa.Settings().SetTheme(variantTheme{theme.DefaultTheme(), theme.VariantLight})
	case ThemeDark:
		u.fa.Settings().SetTheme(variantTheme{theme.DefaultTheme(), theme.VariantDark})
	default:
		if _, forced := u.fa.Settings().Theme().(variantTheme); forced {
			u.fa.Settings().SetTheme(theme.DefaultTheme())
		}
	}
}

// variantTheme is the default theme held to one variant.
type variantTheme struct {
	fyne.Theme
	v fyne.ThemeVariant
}

// Color implements fyne.Theme.
func (t variantTheme) Color(n fyne.ThemeColorName, _ fyne.ThemeVariant) color.Color {
	return t.Theme.Color(n, t.v)
}
