// Command fynefloor is a bare Fyne window with one label: the floor of
// what Fyne's own event loop costs when idle, measured beside Skiff's
// window by TestMeasureWindow.
package main

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/app"
	"fyne.io/fyne/v2/widget"
)

func main() {
	a := app.NewWithID("io.github.skiffvpn.fynefloor")
	w := a.NewWindow("Skiff")
	w.SetContent(widget.NewLabel("Fyne's floor: one label"))
	w.Resize(fyne.NewSize(900, 640))
	w.ShowAndRun()
}
