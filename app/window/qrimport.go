package window

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"fyne.io/fyne/v2/storage"

	"github.com/skiffvpn/skiff/app/qr"
)

// addFromQR asks for an image file holding a QR code (a screenshot, a
// photo of a provider's page) and imports what it says.
//
// Images on the clipboard are not read: Fyne's clipboard is text-only and
// golang.design/x/clipboard needs cgo and libX11 headers at build time,
// which the window's builds do not have; a screenshot saved to a file
// goes through here.
func (v *profilesView) addFromQR() {
	// The filter compares extensions without regard to case.
	v.pickFile(storage.NewExtensionFileFilter([]string{".png", ".jpg", ".jpeg", ".gif"}), v.importQRFile)
}

// importQRFile imports the link or subscription URL in the QR code of the
// image at path, through the same path as a pasted one (addText).
func (v *profilesView) importQRFile(path string) {
	f, err := os.Open(path)
	if err != nil {
		v.say(tr("profiles.fileOpenFailed", M{"Err": err.Error()}), true)
		return
	}
	defer f.Close()
	s, err := qr.Decode(f)
	if err != nil {
		v.say(tr("qr.failed", M{"File": filepath.Base(path), "Why": qrWhy(err)}), true)
		return
	}
	v.addText(strings.TrimSpace(s), tr("qr.from", M{"File": filepath.Base(path)}))
}

// qrWhy says in the window's words why an image gave no link.
func qrWhy(err error) string {
	switch {
	case errors.Is(err, qr.ErrTooLarge):
		return tr("qr.tooLarge")
	case errors.Is(err, qr.ErrNotImage):
		return tr("qr.notImage")
	case errors.Is(err, qr.ErrNoQRCode), errors.Is(err, qr.ErrEmptyText):
		return tr("qr.noCode")
	}
	return strings.TrimPrefix(err.Error(), "qr: ")
}
