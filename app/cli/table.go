package cli

import (
	"io"
	"strings"
	"unicode"

	"golang.org/x/text/width"
)

// displayWidth is how many terminal cells s takes: East Asian wide and
// fullwidth characters (CJK, most emoji) two, combining marks, joiners
// and variation selectors none, a flag (two regional indicators) two,
// the rest one. text/tabwriter counts runes, which misaligned CJK rows.
func displayWidth(s string) int {
	n := 0
	for _, r := range s {
		switch {
		case r == 0x200d || (r >= 0xfe00 && r <= 0xfe0f) || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Me, r) || unicode.Is(unicode.Cf, r):
			// zero width
		case r >= 0x1f1e6 && r <= 0x1f1ff: // regional indicator: a pair is one flag, two cells
			n++
		default:
			switch width.LookupRune(r).Kind() {
			case width.EastAsianWide, width.EastAsianFullwidth:
				n += 2
			default:
				n++
			}
		}
	}
	return n
}

// writeTable writes rows as columns padded to their widest cell by
// display width, two spaces apart, with no trailing spaces.
func writeTable(w io.Writer, rows [][]string) error {
	var widths []int
	for _, r := range rows {
		for i, c := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], displayWidth(c))
		}
	}
	var b strings.Builder
	for _, r := range rows {
		line := ""
		for i, c := range r {
			if i > 0 {
				line += "  "
			}
			line += c
			if i < len(r)-1 {
				line += strings.Repeat(" ", widths[i]-displayWidth(c))
			}
		}
		b.WriteString(strings.TrimRight(line, " "))
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}
