package app

import (
	"fmt"
	"time"
)

// bytesString formats n bytes with a binary unit: "0 B", "12.3 KiB".
func bytesString(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// mibString formats n bytes in whole MiB, rounded: "35 MiB".
func mibString(n uint64) string { return fmt.Sprintf("%d MiB", (n+1<<19)>>20) }

// rateString formats a rate in bytes per second.
func rateString(n int64) string { return bytesString(n) + "/s" }

// ageString formats how long ago t was, coarsely: "12 s", "3 min", "2 h".
func ageString(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case t.IsZero():
		return "never"
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h", int(d.Hours()))
	}
	return fmt.Sprintf("%d d", int(d.Hours()/24))
}

// nodesString is "1 node", "12 nodes".
func nodesString(n int) string {
	if n == 1 {
		return "1 node"
	}
	return fmt.Sprintf("%d nodes", n)
}
