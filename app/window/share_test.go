package window

import (
	"bytes"
	"image"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/test"

	"github.com/skiffvpn/skiff/app/qr"
	"github.com/skiffvpn/skiff/core/link"
)

// overlayImage is the first image drawn from pixels in the top overlay (the
// QR code), or nil.
func overlayImage(w fyne.Window) *canvas.Image {
	for _, o := range overlayObjects(w) {
		if i, ok := o.(*canvas.Image); ok && i.Image != nil && i.Image.Bounds().Dx() >= shareSide { // not the dialog's icon
			return i
		}
	}
	return nil
}

// TestShareWarnsThenShowsLinkAndCode: Share on a node with a password asks
// first; shown, the dialog has the link, a QR code that reads back as the
// link, and a Copy button that puts it on the clipboard.
func TestShareWarnsThenShowsLinkAndCode(t *testing.T) {
	h := newHarness(t, Prefs{}, addLinks(t, hy2Link))
	v := h.ui.profiles
	n := v.p.Nodes[0]
	want, err := link.Format(&n.Config)
	if err != nil {
		t.Fatal(err)
	}
	v.share(n)
	if !overlayText(h.ui.win, "password or key") {
		t.Fatal("no warning before the link is shown")
	}
	if i := overlayImage(h.ui.win); i != nil || overlayText(h.ui.win, want) {
		t.Fatalf("the link is shown with the warning (image %v)", i != nil)
	}
	test.Tap(overlayButton(h.ui.win, "Show"))
	if !overlayText(h.ui.win, want) {
		t.Fatalf("the dialog does not show %q", want)
	}
	img := overlayImage(h.ui.win)
	if img == nil {
		t.Fatal("no QR code in the dialog")
	}
	got, err := qr.DecodeImage(img.Image)
	if err != nil || got != want {
		t.Fatalf("the QR code reads %q, %v; want %q", got, err, want)
	}
	h.ui.fa.Clipboard().SetContent("")
	test.Tap(overlayButton(h.ui.win, "Copy"))
	if c := h.ui.fa.Clipboard().Content(); c != want {
		t.Errorf("clipboard %q, want %q", c, want)
	}
}

// TestShareCancelled: the warning's Cancel shows nothing.
func TestShareCancelled(t *testing.T) {
	h := newHarness(t, Prefs{}, addLinks(t, vlessLink))
	h.ui.profiles.share(h.ui.profiles.p.Nodes[0])
	test.Tap(overlayButton(h.ui.win, "Cancel"))
	if overlayImage(h.ui.win) != nil {
		t.Fatal("cancelled, the QR code is shown")
	}
}

func TestCarriesSecret(t *testing.T) {
	for _, l := range []string{hy2Link, vlessLink, vmessLink,
		"ss://YWVzLTI1Ni1nY206cGFzcw@127.0.0.1:8388#ss",
		"trojan://pw@127.0.0.1:443?sni=a.example#t"} {
		n, err := link.Parse(l)
		if err != nil {
			t.Fatal(err)
		}
		if !carriesSecret(n) {
			t.Errorf("%s: no secret seen", l)
		}
	}
	n, _ := link.Parse(hy2Link)
	n.Hysteria2.Auth = ""
	if carriesSecret(n) {
		t.Error("hysteria2 without auth or obfs password: a secret seen")
	}
}

// writeQR writes text's QR code as a PNG file and returns its path.
func writeQR(t *testing.T, text string) string {
	t.Helper()
	b, err := qr.PNG(text, 320)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "code.png")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestImportQRFile: a QR image of share links imports its nodes, one of a
// subscription URL adds the subscription (the path a pasted URL takes), and
// a broken or hostile image says why in the window.
func TestImportQRFile(t *testing.T) {
	h := newHarness(t, Prefs{}, nil)
	v := h.ui.profiles
	v.importQRFile(writeQR(t, vlessLink))
	if got := v.Shown(); len(got) != 1 || !strings.Contains(v.status.Text, "Imported 1 node") {
		t.Fatalf("after a QR import: list %q, status %q", got, v.status.Text)
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, hy2Link+"\n")
	}))
	defer srv.Close()
	v.importQRFile(writeQR(t, srv.URL+"/sub?token=abc"))
	h.waitFor("the subscription", func() bool { return len(v.p.Subscriptions) == 1 && len(v.p.Nodes) == 2 })

	broken := filepath.Join(t.TempDir(), "broken.png")
	good, _ := qr.PNG(vlessLink, 200)
	os.WriteFile(broken, good[:len(good)/3], 0o600)
	v.importQRFile(broken)
	if !strings.Contains(v.status.Text, "broken.png") || !strings.Contains(v.status.Text, "not a PNG, JPEG or GIF") {
		t.Errorf("a broken image says %q", v.status.Text)
	}

	var blank bytes.Buffer
	png.Encode(&blank, image.NewGray(image.Rect(0, 0, 64, 64)))
	empty := filepath.Join(t.TempDir(), "black.png")
	os.WriteFile(empty, blank.Bytes(), 0o600)
	v.importQRFile(empty)
	if !strings.Contains(v.status.Text, "no QR code") {
		t.Errorf("an image without a code says %q", v.status.Text)
	}
}
