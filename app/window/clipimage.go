package window

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"golang.design/x/clipboard"
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

// sysClipboard is imageClipboard through golang.design/x/clipboard: the
// Win32 clipboard on Windows; X11 on Linux (XWayland under Wayland), over
// a display connection of its own. v0.7.1 dlopens "libX11.so", which
// only libx11-dev installs: without it, or without $DISPLAY, Init fails.
// It reads a selection in one piece: an image its owner sends in parts
// (X11's INCR; xclip does above a few MiB) reads as none.
// The package is initialised at the first read, once: after a failed
// Init its reads may panic, so the failure is kept and every later read
// returns it.
type sysClipboard struct {
	once sync.Once
	err  error // Init's failure
}

func (c *sysClipboard) init() {
	if err := clipboard.Init(); err != nil {
		// Its first clause; lines of install advice for developers follow.
		first, _, _ := strings.Cut(err.Error(), "\n")
		first, _, _ = strings.Cut(first, ", ")
		c.err = fmt.Errorf("%w: %s", errNoClipboard, first)
	}
}

// PNG reads the image. The read is a blocking C call that ctx cannot
// stop: an X11 read waits for the clipboard's owner to answer. A read
// that outlives ctx is left to finish by itself (its goroutine ends
// when the owner answers, or with the process); the caller gets
// ctx's error at once.
func (c *sysClipboard) PNG(ctx context.Context) ([]byte, error) {
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1) // buffered: a late read still ends
	go func() {
		c.once.Do(c.init)
		if c.err != nil {
			done <- result{err: c.err}
			return
		}
		done <- result{b: clipboard.Read(clipboard.FmtImage)}
	}()
	select {
	case r := <-done:
		return r.b, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("read the clipboard's image: %w", ctx.Err())
	}
}
