//go:build !windows && !darwin

package window

import (
	"context"
	"errors"
	"fmt"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"

	"github.com/skiffvpn/skiff/app/qr"
)

// sysClipboard is imageClipboard on X11 (XWayland under Wayland), in
// pure Go over a display connection of its own per read (jezek/xgb): it
// asks the CLIPBOARD selection's owner for image/png and takes the
// answer in one piece or, as GTK sends anything over 256 KiB (a
// screenshot), in parts (ICCCM's INCR). At most qr.MaxFileSize is read.
// Closing the connection ends a read whose owner never answers.
type sysClipboard struct{}

func newSysClipboard() imageClipboard { return sysClipboard{} }

func (sysClipboard) PNG(ctx context.Context) ([]byte, error) {
	x, err := xgb.NewConn()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNoClipboard, err)
	}
	stop := context.AfterFunc(ctx, x.Close) // unblocks WaitForEvent
	defer func() {
		if stop() {
			x.Close()
		}
	}()
	b, err := readSelection(x)
	if ctx.Err() != nil {
		return nil, fmt.Errorf("read the clipboard's image: %w", ctx.Err())
	}
	return b, err
}

// readSelection asks CLIPBOARD's owner for image/png into a property of
// a window of its own and reads the answer; nil when there is no owner
// or it has no image.
func readSelection(x *xgb.Conn) ([]byte, error) {
	atom := func(name string) (xproto.Atom, error) {
		r, err := xproto.InternAtom(x, false, uint16(len(name)), name).Reply()
		if err != nil {
			return 0, fmt.Errorf("read the clipboard: atom %s: %w", name, err)
		}
		return r.Atom, nil
	}
	var sel, png, incr, prop xproto.Atom
	for _, a := range []struct {
		dst  *xproto.Atom
		name string
	}{{&sel, "CLIPBOARD"}, {&png, "image/png"}, {&incr, "INCR"}, {&prop, "SKIFF_CLIPBOARD"}} {
		var err error
		if *a.dst, err = atom(a.name); err != nil {
			return nil, err
		}
	}
	win, err := xproto.NewWindowId(x)
	if err != nil {
		return nil, fmt.Errorf("read the clipboard: %w", err)
	}
	root := xproto.Setup(x).DefaultScreen(x).Root
	if err := xproto.CreateWindowChecked(x, 0, win, root, 0, 0, 1, 1, 0, xproto.WindowClassInputOnly, 0,
		xproto.CwEventMask, []uint32{xproto.EventMaskPropertyChange}).Check(); err != nil {
		return nil, fmt.Errorf("read the clipboard: window: %w", err)
	}
	defer xproto.DestroyWindow(x, win)
	if err := xproto.ConvertSelectionChecked(x, win, sel, png, prop, xproto.TimeCurrentTime).Check(); err != nil {
		return nil, fmt.Errorf("read the clipboard: %w", err)
	}
	for {
		ev, err := wait(x)
		if err != nil {
			return nil, err
		}
		n, ok := ev.(xproto.SelectionNotifyEvent)
		if !ok || n.Requestor != win {
			continue
		}
		if n.Property == xproto.AtomNone {
			return nil, nil // no owner, or no image
		}
		first, err := takeProperty(x, win, prop)
		if err != nil {
			return nil, err
		}
		if first.Type != incr {
			if first.Type != png {
				return nil, nil
			}
			return first.Value, nil
		}
		return readIncr(x, win, prop)
	}
}

// readIncr reads an INCR transfer: the owner writes a part each time the
// property was deleted, and a part of length 0 last.
func readIncr(x *xgb.Conn, win xproto.Window, prop xproto.Atom) ([]byte, error) {
	var b []byte
	for {
		ev, err := wait(x)
		if err != nil {
			return nil, err
		}
		p, ok := ev.(xproto.PropertyNotifyEvent)
		if !ok || p.Window != win || p.Atom != prop || p.State != xproto.PropertyNewValue {
			continue
		}
		part, err := takeProperty(x, win, prop)
		if err != nil {
			return nil, err
		}
		if len(part.Value) == 0 {
			return b, nil
		}
		if len(b)+len(part.Value) > qr.MaxFileSize {
			return nil, errClipTooBig
		}
		b = append(b, part.Value...)
	}
}

// takeProperty reads and deletes win's property prop, refusing one over
// qr.MaxFileSize.
func takeProperty(x *xgb.Conn, win xproto.Window, prop xproto.Atom) (*xproto.GetPropertyReply, error) {
	r, err := xproto.GetProperty(x, true, win, prop, xproto.GetPropertyTypeAny, 0, qr.MaxFileSize/4+1).Reply()
	if err != nil {
		return nil, fmt.Errorf("read the clipboard: %w", err)
	}
	if len(r.Value) > qr.MaxFileSize || r.BytesAfter > 0 {
		return nil, errClipTooBig
	}
	return r, nil
}

// wait returns the next event; a closed connection (the read's context
// ended) is an error.
func wait(x *xgb.Conn) (xgb.Event, error) {
	ev, xerr := x.WaitForEvent()
	switch {
	case xerr != nil:
		return nil, fmt.Errorf("read the clipboard: %v", xerr)
	case ev == nil:
		return nil, errors.New("read the clipboard: the display connection closed")
	}
	return ev, nil
}
