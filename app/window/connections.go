package window

import (
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/stats"
)

// connColumns are the Connections table's columns: their titles' keys
// and widths.
var connColumns = []struct {
	title string
	width float32
}{
	{"conns.source", 125}, {"conns.destination", 170}, {"conns.route", 100}, {"conns.member", 100},
	{"conns.up", 76}, {"conns.down", 76}, {"conns.age", 50}, {"", 40},
}

// connColumnWidth is column i's width: as wide as its title in the
// window's language needs, at least its own.
func connColumnWidth(i int) float32 {
	c := connColumns[i]
	if c.title == "" {
		return c.width
	}
	return max(c.width, widget.NewLabelWithStyle(tr(c.title), fyne.TextAlignLeading, fyne.TextStyle{Bold: true}).MinSize().Width)
}

// connectionsView is the live connection table.
type connectionsView struct {
	u     *UI
	obj   fyne.CanvasObject
	table *widget.Table
	count *widget.Label
	rows  []stats.ConnInfo
	now   time.Time
	route string // the route's name, shown for the core's proxy target
}

func newConnectionsView(u *UI) *connectionsView {
	v := &connectionsView{u: u}
	v.table = widget.NewTableWithHeaders(
		func() (int, int) { return len(v.rows), len(connColumns) },
		func() fyne.CanvasObject {
			l := widget.NewLabel("")
			l.Truncation = fyne.TextTruncateEllipsis
			b := widget.NewButtonWithIcon("", theme.CancelIcon(), nil)
			b.Importance = widget.LowImportance
			b.Hide()
			return container.NewStack(l, b)
		},
		func(id widget.TableCellID, o fyne.CanvasObject) {
			box := o.(*fyne.Container)
			l, b := box.Objects[0].(*widget.Label), box.Objects[1].(*widget.Button)
			if id.Row >= len(v.rows) {
				return
			}
			c := v.rows[id.Row]
			if id.Col == len(connColumns)-1 {
				l.Hide()
				b.Show()
				cid := c.ID
				b.OnTapped = func() {
					v.u.closeConnection(cid)
					v.update()
				}
				return
			}
			b.Hide()
			l.Show()
			l.SetText(v.cell(c, id.Col))
		},
	)
	v.table.ShowHeaderColumn = false
	v.table.CreateHeader = func() fyne.CanvasObject {
		l := widget.NewLabel("")
		l.TextStyle.Bold = true
		return l
	}
	v.table.UpdateHeader = func(id widget.TableCellID, o fyne.CanvasObject) {
		if id.Col >= 0 && connColumns[id.Col].title != "" {
			o.(*widget.Label).SetText(tr(connColumns[id.Col].title))
		}
	}
	for i := range connColumns {
		v.table.SetColumnWidth(i, connColumnWidth(i))
	}
	v.count = widget.NewLabel("")
	closeAll := widget.NewButtonWithIcon(tr("conns.closeAll"), theme.DeleteIcon(), func() {
		for _, c := range v.rows {
			v.u.closeConnection(c.ID)
		}
		v.update()
	})
	v.obj = container.NewPadded(container.NewBorder(container.NewBorder(nil, nil, nil, closeAll, v.count), nil, nil, nil, v.table))
	return v
}

// cell is the text of column col for c.
func (v *connectionsView) cell(c stats.ConnInfo, col int) string {
	switch col {
	case 0:
		return c.Source
	case 1:
		d := c.Destination
		if c.Host != "" {
			d = c.Host + " (" + c.Destination + ")"
		}
		return c.Network + " " + d
	case 2:
		if c.Outbound == core.TargetProxy && v.route != "" {
			return v.route
		}
		return c.Outbound
	case 3:
		if c.Member != "" {
			return c.Member
		}
		if c.Outbound == core.TargetDirect || c.Outbound == core.TargetBlock {
			return "—"
		}
		return c.Outbound
	case 4:
		return bytesString(c.Up)
	case 5:
		return bytesString(c.Down)
	case 6:
		return ageString(v.now, c.Start)
	}
	return ""
}

// update pulls the connection list; it runs on the UI thread while the tab
// is shown.
func (v *connectionsView) update() {
	v.rows = v.u.liveConns()
	v.now = time.Now()
	st := v.u.status()
	v.route = v.u.currentRoute().name
	switch {
	case st.Listen == "":
		v.count.SetText(tr("conns.notConnected"))
	default:
		v.count.SetText(trN("conns.open", len(v.rows)))
	}
	v.table.Refresh()
}
