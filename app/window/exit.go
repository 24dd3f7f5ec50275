package window

import (
	"context"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/widget"

	"github.com/skiffvpn/skiff/core/api"
)

// exitLine is Home's "Exit 203.0.113.7 · 🇩🇪 DE" line: where traffic
// leaves from, as the core finds it (Backend.Exit). It asks once per run
// and route member; the core keeps the answer and bounds the checks.
type exitLine struct {
	u     *UI
	label *widget.Label
	asked string // the run and member last asked for
}

func newExitLine(u *UI) *exitLine {
	e := &exitLine{u: u, label: widget.NewLabel("")}
	e.label.Truncation = fyne.TextTruncateEllipsis
	e.label.Hide()
	return e
}

// update asks for the exit of the run that started at since and carries
// flows on member; connected false hides the line.
func (e *exitLine) update(connected bool, since time.Time, member string) {
	if !connected {
		e.asked = ""
		e.label.Hide()
		return
	}
	key := since.String() + "\x00" + member
	if key == e.asked {
		return
	}
	e.asked = key
	setText(e.label, tr("home.exitChecking"))
	e.label.Show()
	var ex *api.Exit
	var err error
	e.u.background(func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, 25*time.Second)
		defer cancel()
		ex, err = e.u.b.Exit(ctx, false)
	}, func() {
		if e.asked != key {
			return // another run or member by now
		}
		if err != nil {
			setText(e.label, tr("home.exitUnknown"))
			return
		}
		setText(e.label, tr("home.exit", M{"IP": ex.IP, "Country": flagOf(ex.Country) + " " + ex.Country}))
	})
}

// flagOf is the flag emoji of an ISO 3166-1 alpha-2 code (two regional
// indicator letters), or "" for anything else (the core's "XX": unknown).
func flagOf(cc string) string {
	if len(cc) != 2 || cc == "XX" {
		return ""
	}
	r := make([]rune, 2)
	for i := range 2 {
		c := cc[i]
		if c < 'A' || c > 'Z' {
			return ""
		}
		r[i] = 0x1F1E6 + rune(c-'A')
	}
	return string(r)
}
