package window

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/skiffvpn/skiff/app/qr"
)

// imageClipboard reads the image on the system clipboard: the seam the
// tests replace. Fyne's clipboard is text-only.
type imageClipboard interface {
	// PNG returns the clipboard's image as PNG bytes, or nil when it holds
	// no image. An error means the clipboard could not be read at all
	// (errNoClipboard), or not before ctx ended.
	PNG(ctx context.Context) ([]byte, error)
}

// clipboardWait bounds a read of the clipboard's image: an X11 owner
// answers in milliseconds, one that hangs never does.
const clipboardWait = 5 * time.Second

// errNoClipboard: the system clipboard cannot be read for images here.
var errNoClipboard = errors.New("the clipboard cannot be read for images")

// errClipTooBig: the clipboard's image is larger than a QR picture needs.
var errClipTooBig = fmt.Errorf("the clipboard's image: %w", qr.ErrTooLarge)
