//go:build windows || darwin

package window

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"golang.design/x/clipboard"
)

// sysClipboard is imageClipboard through golang.design/x/clipboard: the
// Win32 clipboard on Windows, the pasteboard on macOS. The package is
// initialised at the first read, once: after a failed Init its reads may
// panic, so the failure is kept and every later read returns it.
type sysClipboard struct {
	once sync.Once
	err  error // Init's failure
}

func newSysClipboard() imageClipboard { return &sysClipboard{} }

func (c *sysClipboard) init() {
	if err := clipboard.Init(); err != nil {
		// Its first clause; lines of install advice for developers follow.
		first, _, _ := strings.Cut(err.Error(), "\n")
		first, _, _ = strings.Cut(first, ", ")
		c.err = fmt.Errorf("%w: %s", errNoClipboard, first)
	}
}

// PNG reads the image. The read is a blocking call that ctx cannot stop:
// one that outlives ctx is left to finish by itself (its goroutine ends
// when the system answers, or with the process); the caller gets ctx's
// error at once.
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
