package window

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"

	"fyne.io/fyne/v2/storage"

	"github.com/skiffvpn/skiff/app/qr"
)

// addFromQR asks for an image file holding a QR code (a screenshot, a
// photo of a provider's page) and imports what it says.
func (v *profilesView) addFromQR() {
	// The filter compares extensions without regard to case.
	v.pickFile(storage.NewExtensionFileFilter([]string{".png", ".jpg", ".jpeg", ".gif"}), v.importQRFile)
}

// importQRFile imports the link or subscription URL in the QR code of the
// image at path.
func (v *profilesView) importQRFile(path string) {
	f, err := os.Open(path)
	if err != nil {
		v.say(tr("profiles.fileOpenFailed", M{"Err": err.Error()}), true)
		return
	}
	defer f.Close()
	if err := v.importQR(f, tr("qr.from", M{"File": filepath.Base(path)})); err != nil {
		v.say(tr("qr.failed", M{"File": filepath.Base(path), "Why": qrWhy(err)}), true)
	}
}

// addFromClipboard (Paste) imports what the clipboard holds: the QR code
// of an image on it (a screenshot copied), else its text (a subscription
// URL, share links). The image is read off the UI thread: on X11 the
// clipboard's owner may be this window, which answers there.
func (v *profilesView) addFromClipboard() {
	v.paste.Disable() // one read at a time
	u := v.u
	u.wg.Add(1)
	go func() {
		defer u.wg.Done()
		ctx, cancel := context.WithTimeout(u.ctx, clipboardWait)
		defer cancel()
		b, err := u.clip.PNG(ctx)
		u.do(func() {
			v.paste.Enable()
			v.pasteClipboard(b, err)
		})
	}()
}

// pasteClipboard imports what a read of the clipboard's image gave (b,
// err), or else the clipboard's text. An image without a code gives way
// to text beside it (an application may offer both).
func (v *profilesView) pasteClipboard(b []byte, err error) {
	button := M{"Button": tr("profiles.qr")}
	if errors.Is(err, qr.ErrTooLarge) {
		v.say(tr("qr.clipboardFailed", M{"Why": qrWhy(err)}), true)
		return
	}
	if err != nil && !errors.Is(err, errNoClipboard) {
		// The owner did not answer: its text would not come either.
		v.say(tr("qr.clipboardSlow", button), true)
		return
	}
	if err != nil {
		v.u.log.Info("window: clipboard images", "err", err)
	}
	text := strings.TrimSpace(v.u.fa.Clipboard().Content())
	if len(b) > 0 {
		qerr := v.importQR(bytes.NewReader(b), tr("qr.fromClipboard"))
		if qerr == nil {
			return
		}
		if text == "" {
			v.say(tr("qr.clipboardFailed", M{"Why": qrWhy(qerr)}), true)
			return
		}
	}
	switch {
	case text != "":
		v.addText(text, tr("profiles.fromClipboard"))
	case err != nil:
		v.say(tr("qr.clipboardUnavailable", button), true)
	default:
		v.say(tr("profiles.clipboardEmpty"), true)
	}
}

// importQR imports the link or subscription URL in the QR code of the
// image r holds, through the same path as a pasted one (addText); from
// names the source in what that says. It returns why r gave no link
// (qr.Decode refuses a huge image before decoding it), having said
// nothing.
func (v *profilesView) importQR(r io.Reader, from string) error {
	s, err := qr.Decode(r)
	if err != nil {
		return err
	}
	v.addText(strings.TrimSpace(s), from)
	return nil
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
