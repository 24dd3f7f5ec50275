package safetext

import (
	"io"
	"sync"
	"unicode/utf8"
)

// Writer passes text to W without forbidden runes other than '\n' and
// '\t', which printed text needs; invalid UTF-8 becomes U+FFFD. A rune
// split across two Writes is held until the second. It is safe for
// concurrent use: loggers and the command share a stream.
type Writer struct {
	W io.Writer

	mu      sync.Mutex
	pending []byte // the start of a rune the last Write ended in
	buf     []byte
}

// NewWriter returns a Writer to w.
func NewWriter(w io.Writer) *Writer { return &Writer{W: w} }

// Write implements io.Writer. It reports len(p) when W took all of the
// cleaned text.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	in := p
	if len(w.pending) > 0 {
		in = append(w.pending, p...)
		w.pending = nil
	}
	out := w.buf[:0]
	for i := 0; i < len(in); {
		c := in[i]
		if c >= 0x20 && c < 0x7f || c == '\n' || c == '\t' {
			out = append(out, c)
			i++
			continue
		}
		if !utf8.FullRune(in[i:]) {
			w.pending = append([]byte(nil), in[i:]...)
			break
		}
		r, size := utf8.DecodeRune(in[i:])
		i += size
		switch {
		case r == utf8.RuneError && size == 1:
			out = utf8.AppendRune(out, utf8.RuneError)
		case !Forbidden(r):
			out = utf8.AppendRune(out, r)
		}
	}
	w.buf = out[:0]
	if len(out) == 0 {
		return len(p), nil
	}
	if _, err := w.W.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}
