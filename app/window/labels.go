package window

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/widget"
)

// trKey says k in the window's words by its message key in keys, or
// otherwise for a k the window does not know. Keys stay literal in the
// tables so that the bundles' tests see them used.
func trKey[K comparable](keys map[K]string, k K, otherwise string) string {
	if key, ok := keys[k]; ok {
		return tr(key)
	}
	return otherwise
}

// cutLabel is a label that ends in "…" where it does not fit; sample
// sizes it before the list fills it.
func cutLabel(sample string) *widget.Label {
	l := widget.NewLabel(sample)
	l.Truncation = fyne.TextTruncateEllipsis
	return l
}

// labelList is a list of n cut labels, each set by update.
func labelList(n func() int, sample string, update func(i widget.ListItemID, l *widget.Label)) *widget.List {
	return widget.NewList(n,
		func() fyne.CanvasObject { return cutLabel(sample) },
		func(i widget.ListItemID, o fyne.CanvasObject) { update(i, o.(*widget.Label)) },
	)
}
