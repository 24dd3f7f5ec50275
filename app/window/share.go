package window

import (
	"encoding/json"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/skiffvpn/skiff/app/qr"
	"github.com/skiffvpn/skiff/core/link"
	nodepkg "github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/profile"
)

// shareSide is the QR code's side in the Share dialog: a 600-byte link
// (version ~20, 97 modules) keeps 3 px a module, which phones read off a
// screen at arm's length.
const shareSide = 300

// share shows n as a share link and its QR code. A link that carries the
// server's password or key is a secret: the user is warned first, and the
// link is never logged.
func (v *profilesView) share(n *profile.Node) {
	s, err := link.Format(&n.Config)
	if err != nil {
		v.say(tr("share.failed", M{"Name": n.Name(), "Err": strings.TrimPrefix(err.Error(), "link: ")}), true)
		return
	}
	if !carriesSecret(&n.Config) {
		v.showShare(n.Name(), s)
		return
	}
	d := dialog.NewConfirm(tr("share.secretTitle"), tr("share.secretText", M{"Name": n.Name()}), func(ok bool) {
		if ok {
			v.showShare(n.Name(), s)
		}
	}, v.u.win)
	d.SetConfirmText(tr("share.show"))
	d.SetDismissText(tr("dialog.cancel"))
	d.Show()
}

// showShare shows the link s of the node called name with its QR code and
// a button that copies it.
func (v *profilesView) showShare(name, s string) {
	text := widget.NewLabel(s)
	text.Wrapping = fyne.TextWrapBreak
	text.Selectable = true
	var code fyne.CanvasObject
	if img, err := qr.Image(s, shareSide); err != nil {
		// Too long for a QR code: the link alone still shares it.
		l := widget.NewLabel(tr("share.noCode", M{"Err": strings.TrimPrefix(err.Error(), "qr: ")}))
		l.Wrapping = fyne.TextWrapWord
		code = l
	} else {
		ci := canvas.NewImageFromImage(img)
		ci.FillMode = canvas.ImageFillContain
		ci.ScaleMode = canvas.ImageScalePixels // crisp modules
		ci.SetMinSize(fyne.NewSize(shareSide*0.8, shareSide*0.8))
		code = container.NewCenter(ci)
	}
	scroll := container.NewVScroll(text)
	scroll.SetMinSize(fyne.NewSize(440, 80))
	d := dialog.NewCustom(tr("share.title", M{"Name": name}), tr("dialog.close"), container.NewBorder(code, nil, nil, nil, scroll), v.u.win)
	copyBtn := widget.NewButtonWithIcon(tr("logs.copy"), theme.ContentCopyIcon(), func() {
		v.u.fa.Clipboard().SetContent(s)
		v.say(tr("share.copied", M{"Name": name}), false)
	})
	d.SetButtons([]fyne.CanvasObject{copyBtn, widget.NewButton(tr("dialog.close"), d.Hide)})
	d.Show()
}

// carriesSecret says whether n's share link holds something that lets its
// holder use the server: a password, UUID, auth string or private key.
// It looks at the node's fields by their JSON names, so a protocol added
// later with a "password" is covered without a change here.
func carriesSecret(n *nodepkg.Node) bool {
	b, err := json.Marshal(n)
	if err != nil {
		return true // when unsure, warn
	}
	var m any
	if json.Unmarshal(b, &m) != nil {
		return true
	}
	return secretIn(m)
}

func secretIn(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && s != "" && secretKey(k) {
				return true
			}
			if secretIn(x) {
				return true
			}
		}
	case []any:
		for _, x := range v {
			if secretIn(x) {
				return true
			}
		}
	}
	return false
}

func secretKey(k string) bool {
	k = strings.ToLower(k)
	return k == "uuid" || k == "auth" || k == "psk" || strings.Contains(k, "password") ||
		strings.Contains(k, "passphrase") || strings.Contains(k, "privatekey") || strings.Contains(k, "presharedkey")
}
