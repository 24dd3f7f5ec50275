package window

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/skiffvpn/skiff/core/stats"
)

// Graph draws upload and download rates over the last minute, one point a
// second, scaled to the highest rate shown.
type Graph struct {
	widget.BaseWidget
	samples []stats.Sample
}

// Colours of the two series (their legends are text, so they are theme
// colours that pass the contrast test).
const (
	colorUp   = theme.ColorNameWarning
	colorDown = theme.ColorNamePrimary
)

// newGraph returns an empty graph.
func newGraph() *Graph {
	g := &Graph{}
	g.ExtendBaseWidget(g)
	return g
}

// SetSamples replaces the series (oldest first; the last stats.Window are
// kept) and redraws.
func (g *Graph) SetSamples(s []stats.Sample) {
	if len(s) > stats.Window {
		s = s[len(s)-stats.Window:]
	}
	g.samples = append(g.samples[:0], s...)
	g.Refresh()
}

// Shows reports whether the graph draws s as it is: the same rates in the
// same places (the samples' times do not show).
func (g *Graph) Shows(s []stats.Sample) bool {
	if len(s) > stats.Window {
		s = s[len(s)-stats.Window:]
	}
	if len(s) != len(g.samples) {
		return false
	}
	for i := range s {
		if s[i].Up != g.samples[i].Up || s[i].Down != g.samples[i].Down {
			return false
		}
	}
	return true
}

// Samples returns how many samples the graph shows.
func (g *Graph) Samples() int { return len(g.samples) }

// MinSize is a readable graph's size.
func (g *Graph) MinSize() fyne.Size { return fyne.NewSize(240, 110) }

// CreateRenderer implements fyne.Widget.
func (g *Graph) CreateRenderer() fyne.WidgetRenderer {
	r := &graphRenderer{g: g, bg: canvas.NewRectangle(theme.Color(theme.ColorNameInputBackground))}
	r.bg.CornerRadius = theme.InputRadiusSize()
	for i := range r.up {
		r.up[i] = canvas.NewLine(theme.Color(colorUp))
		r.up[i].StrokeWidth = 2
		r.down[i] = canvas.NewLine(theme.Color(colorDown))
		r.down[i].StrokeWidth = 2
	}
	for i := range r.grid {
		r.grid[i] = canvas.NewLine(theme.Color(theme.ColorNameSeparator))
		r.grid[i].StrokeWidth = 1
	}
	r.top = canvas.NewText("", theme.Color(theme.ColorNamePlaceHolder))
	r.top.TextSize = theme.CaptionTextSize()
	r.legUp = canvas.NewText("↑ "+tr("graph.upload"), theme.Color(colorUp))
	r.legUp.TextSize = theme.CaptionTextSize()
	r.legDown = canvas.NewText("↓ "+tr("graph.download"), theme.Color(colorDown))
	r.legDown.TextSize = theme.CaptionTextSize()
	r.span = canvas.NewText("", theme.Color(theme.ColorNamePlaceHolder))
	r.span.TextSize = theme.CaptionTextSize()
	r.objs = append(r.objs, r.bg)
	for i := range r.grid {
		r.objs = append(r.objs, r.grid[i])
	}
	for i := range r.up {
		r.objs = append(r.objs, r.down[i], r.up[i])
	}
	r.objs = append(r.objs, r.top, r.legUp, r.legDown, r.span)
	return r
}

type graphRenderer struct {
	g              *Graph
	bg             *canvas.Rectangle
	grid           [3]*canvas.Line
	up, down       [stats.Window - 1]*canvas.Line
	top, span      *canvas.Text
	legUp, legDown *canvas.Text
	objs           []fyne.CanvasObject
	size           fyne.Size
}

func (r *graphRenderer) Layout(s fyne.Size) {
	r.size = s
	r.bg.Resize(s)
	r.draw()
}

func (r *graphRenderer) MinSize() fyne.Size { return r.g.MinSize() }

func (r *graphRenderer) Refresh() {
	r.bg.FillColor = theme.Color(theme.ColorNameInputBackground)
	r.top.Color = theme.Color(theme.ColorNamePlaceHolder)
	r.span.Color = r.top.Color
	for _, l := range r.grid {
		l.StrokeColor = theme.Color(theme.ColorNameSeparator)
	}
	up, down := theme.Color(colorUp), theme.Color(colorDown)
	r.legUp.Color, r.legDown.Color = up, down
	for i := range r.up {
		r.up[i].StrokeColor, r.down[i].StrokeColor = up, down
	}
	r.draw()
	canvas.Refresh(r.g)
}

func (r *graphRenderer) Objects() []fyne.CanvasObject { return r.objs }

func (r *graphRenderer) Destroy() {}

// draw positions every line for the current samples and size.
func (r *graphRenderer) draw() {
	s := r.g.samples
	w, h := r.size.Width, r.size.Height
	pad := float32(theme.Padding())
	top := pad + theme.CaptionTextSize() + 2
	plotH := h - top - pad
	if plotH < 1 {
		plotH = 1
	}
	var peak int64 = 1024 // at least 1 KiB/s full scale
	for _, x := range s {
		peak = max(peak, x.Up, x.Down)
	}
	peak = niceCeil(peak)
	r.top.Text = tr("graph.scale", M{"Rate": rateString(peak)})
	r.top.Move(fyne.NewPos(pad, pad/2))
	r.top.Refresh()
	x := pad + fyne.MeasureText(r.top.Text, r.top.TextSize, r.top.TextStyle).Width + 2*pad
	r.legUp.Move(fyne.NewPos(x, pad/2))
	x += fyne.MeasureText(r.legUp.Text, r.legUp.TextSize, r.legUp.TextStyle).Width + 2*pad
	r.legDown.Move(fyne.NewPos(x, pad/2))
	r.span.Text = tr("graph.span", M{"N": stats.Window})
	ss := fyne.MeasureText(r.span.Text, r.span.TextSize, r.span.TextStyle)
	r.span.Move(fyne.NewPos(w-ss.Width-pad, pad/2))
	for i, l := range r.grid {
		y := top + plotH*float32(i)/float32(len(r.grid)-1)
		l.Position1 = fyne.NewPos(pad, y)
		l.Position2 = fyne.NewPos(w-pad, y)
	}
	step := (w - 2*pad) / float32(stats.Window-1)
	// Right-align: the newest sample is at the right edge.
	off := stats.Window - len(s)
	y := func(v int64) float32 { return top + plotH - plotH*float32(v)/float32(peak) }
	for i := range r.up {
		if i < off || i+1-off >= len(s) {
			r.up[i].Hide()
			r.down[i].Hide()
			continue
		}
		a, b := s[i-off], s[i+1-off]
		x1, x2 := pad+step*float32(i), pad+step*float32(i+1)
		r.up[i].Position1, r.up[i].Position2 = fyne.NewPos(x1, y(a.Up)), fyne.NewPos(x2, y(b.Up))
		r.down[i].Position1, r.down[i].Position2 = fyne.NewPos(x1, y(a.Down)), fyne.NewPos(x2, y(b.Down))
		r.up[i].Show()
		r.down[i].Show()
	}
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten
// so the scale reads well.
func niceCeil(v int64) int64 {
	unit := int64(1)
	for v > unit*1000 {
		unit *= 1000
	}
	for _, m := range []int64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000} {
		if v <= unit*m {
			return unit * m
		}
	}
	return v
}
