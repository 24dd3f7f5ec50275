package window

import (
	"strings"

	"github.com/skiffvpn/skiff/core/api"
)

// maxWarningsShown bounds the entries listed under an import's outcome: a
// 300-proxy Clash file of SSR nodes would otherwise push the list off the
// window; the rest are counted.
const maxWarningsShown = 5

// warningsText lists what an import skipped and why (a dropped SSR or
// mieru proxy, a line that is not a link), "" when it skipped nothing.
func warningsText(res *api.ImportResult) string {
	if res == nil || len(res.Warnings) == 0 {
		return ""
	}
	ws := res.Warnings
	var b strings.Builder
	b.WriteString(trN("profiles.skipped", len(ws)))
	for i, w := range ws {
		if i == maxWarningsShown {
			b.WriteString("\n• " + trN("profiles.skippedMore", len(ws)-i))
			break
		}
		b.WriteString("\n• " + w)
	}
	return b.String()
}
