package subscription

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"github.com/skiffvpn/skiff/core/link"
)

// parseURIList reads one share link per line through link.Parse. Blank lines
// and comments (# or //) are ignored; any other line that does not parse is
// a warning with its line number.
func parseURIList(text []byte, res *Result) {
	text = bytes.TrimPrefix(text, bom)
	lineNo := 0
	for raw := range bytes.Lines(text) {
		lineNo++
		line := strings.TrimSpace(string(bytes.TrimRight(raw, "\r\n")))
		line = strings.TrimPrefix(line, "\uFEFF")
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "//") {
			continue
		}
		if !utf8.ValidString(line) {
			res.warn(lineNo, "not valid UTF-8 text")
			continue
		}
		n, err := link.Parse(line)
		res.add(lineNo, n, err)
	}
}
