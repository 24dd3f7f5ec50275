package window

import (
	"slices"
	"sort"
	"strings"
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
	{"conns.source", 100}, {"conns.destination", 112}, {"conns.route", 91}, {"conns.member", 91},
	{"conns.up", 84}, {"conns.down", 84}, {"conns.speed", 90}, {"conns.age", 50}, {"", 40},
}

// connGrow is each column's share of the width beyond the columns'
// least: the names (destination, route, server) take it, the figures
// keep theirs.
var connGrow = []float32{0.15, 0.35, 0.25, 0.25, 0, 0, 0, 0, 0}

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

	filter *widget.Entry  // rows whose texts contain it
	sortBy *widget.Select // the rows' order
	width  float32        // the table's width the columns were laid out for
	// prev is each connection's bytes down at the last update, and when,
	// for its speed.
	prev   map[uint64]int64
	prevAt time.Time
	speed  map[uint64]int64 // bytes per second down, by connection
}

func newConnectionsView(u *UI) *connectionsView {
	v := &connectionsView{u: u, prev: map[uint64]int64{}, speed: map[uint64]int64{}}
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
	v.filter = widget.NewEntry()
	v.filter.SetPlaceHolder(tr("conns.filter"))
	v.filter.OnChanged = func(string) { v.update() }
	v.sortBy = widget.NewSelect(connSortLabels(), func(string) { v.update() })
	v.sortBy.SetSelectedIndex(0)
	tools := container.NewBorder(nil, nil, v.count, container.NewHBox(v.sortBy, closeAll), v.filter)
	v.obj = container.NewPadded(container.NewBorder(tools, nil, nil, nil, v.table))
	return v
}

// cell is the text of column col for c.
func (v *connectionsView) cell(c stats.ConnInfo, col int) string {
	switch col {
	case 0:
		// The program when the core found it, else where the
		// connection came from.
		if p := c.Program(); p != "" {
			return p
		}
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
		return rateString(v.speed[c.ID])
	case 7:
		return ageString(v.now, c.Start)
	}
	return ""
}

// update pulls the connection list; it runs on the UI thread while the tab
// is shown.
func (v *connectionsView) update() {
	v.now = time.Now()
	v.rows = v.arrange(v.u.liveConns())
	v.fit()
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

// Orders of the rows.
const (
	connSortNewest = iota
	connSortOldest
	connSortSpeed
	connSortDown
	connSortUp
)

func connSortLabels() []string {
	return []string{tr("conns.sortNewest"), tr("conns.sortOldest"), tr("conns.sortSpeed"), tr("conns.sortDown"), tr("conns.sortUp")}
}

// arrange measures each connection's speed since the last update and
// returns the rows the filter keeps, in the chosen order.
func (v *connectionsView) arrange(all []stats.ConnInfo) []stats.ConnInfo {
	dt := v.now.Sub(v.prevAt).Seconds()
	speed := make(map[uint64]int64, len(all))
	prev := make(map[uint64]int64, len(all))
	for _, c := range all {
		prev[c.ID] = c.Down
		if p, ok := v.prev[c.ID]; ok && dt > 0.2 {
			speed[c.ID] = int64(float64(c.Down-p) / dt)
		} else {
			speed[c.ID] = v.speed[c.ID]
		}
	}
	if dt > 0.2 || len(v.prev) == 0 {
		v.prev, v.prevAt = prev, v.now
	}
	v.speed = speed
	q := strings.ToLower(strings.TrimSpace(v.filter.Text))
	rows := make([]stats.ConnInfo, 0, len(all))
	for _, c := range all {
		if q == "" || strings.Contains(strings.ToLower(v.cell(c, 0)+" "+c.Source+" "+v.cell(c, 1)+" "+v.cell(c, 2)+" "+v.cell(c, 3)), q) {
			rows = append(rows, c)
		}
	}
	switch v.sortBy.SelectedIndex() {
	case connSortNewest:
		slices.Reverse(rows) // the core lists them oldest first
	case connSortSpeed:
		sort.SliceStable(rows, func(i, j int) bool { return speed[rows[i].ID] > speed[rows[j].ID] })
	case connSortDown:
		sort.SliceStable(rows, func(i, j int) bool { return rows[i].Down > rows[j].Down })
	case connSortUp:
		sort.SliceStable(rows, func(i, j int) bool { return rows[i].Up > rows[j].Up })
	}
	return rows
}

// fit lays the columns out for the table's width (connWidths).
func (v *connectionsView) fit() {
	w := v.table.Size().Width
	if w <= 0 || w == v.width {
		return
	}
	v.width = w
	for i, cw := range connWidths(w) {
		v.table.SetColumnWidth(i, cw)
	}
}

// connWidths spreads width w over the columns: each gets at least what
// its title and figures need, the names the rest (connGrow), so that a
// route is not cut while the window has room.
func connWidths(w float32) []float32 {
	out := make([]float32, len(connColumns))
	least := float32(0)
	for i := range connColumns {
		out[i] = connColumnWidth(i)
		least += out[i]
	}
	extra := max(w-least-theme.Padding()*float32(len(connColumns)+2), 0)
	for i := range out {
		out[i] += extra * connGrow[i]
	}
	return out
}
