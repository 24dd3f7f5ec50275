package app

import (
	"fmt"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/skiffvpn/skiff/core/stats"
)

// connColumns are the Connections table's columns.
var connColumns = []struct {
	title string
	width float32
}{
	{"App / source", 150}, {"Destination", 220}, {"Route", 130}, {"Member", 110},
	{"Up", 80}, {"Down", 80}, {"Age", 60}, {"", 44},
}

// connectionsView is the live connection table.
type connectionsView struct {
	u     *UI
	obj   fyne.CanvasObject
	table *widget.Table
	count *widget.Label
	rows  []stats.ConnInfo
	now   time.Time
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
					v.u.ctrl.CloseConnection(cid)
					v.update()
				}
				return
			}
			b.Hide()
			l.Show()
			l.SetText(connCell(c, id.Col, v.now))
		},
	)
	v.table.ShowHeaderColumn = false
	v.table.CreateHeader = func() fyne.CanvasObject {
		l := widget.NewLabel("")
		l.TextStyle.Bold = true
		return l
	}
	v.table.UpdateHeader = func(id widget.TableCellID, o fyne.CanvasObject) {
		if id.Col >= 0 {
			o.(*widget.Label).SetText(connColumns[id.Col].title)
		}
	}
	for i, c := range connColumns {
		v.table.SetColumnWidth(i, c.width)
	}
	v.count = widget.NewLabel("")
	closeAll := widget.NewButtonWithIcon("Close all", theme.DeleteIcon(), func() {
		for _, c := range v.rows {
			v.u.ctrl.CloseConnection(c.ID)
		}
		v.update()
	})
	v.obj = container.NewPadded(container.NewBorder(container.NewBorder(nil, nil, nil, closeAll, v.count), nil, nil, nil, v.table))
	return v
}

// connCell is the text of column col for c.
func connCell(c stats.ConnInfo, col int, now time.Time) string {
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
		return c.Outbound
	case 3:
		return c.Outbound // the core reports no group member per connection yet
	case 4:
		return bytesString(c.Up)
	case 5:
		return bytesString(c.Down)
	case 6:
		return ageString(now, c.Start)
	}
	return ""
}

// update pulls the connection list; it runs on the UI thread while the tab
// is shown.
func (v *connectionsView) update() {
	v.rows = v.u.ctrl.Connections()
	v.now = time.Now()
	if v.u.ctrl.Status().Listen == "" {
		v.count.SetText("Not connected.")
	} else {
		v.count.SetText(fmt.Sprintf("%d open connections", len(v.rows)))
	}
	v.table.Refresh()
}
