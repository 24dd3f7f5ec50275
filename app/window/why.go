package window

import (
	"time"

	"github.com/skiffvpn/skiff/core/fault"
	"github.com/skiffvpn/skiff/core/group"
	"github.com/skiffvpn/skiff/core/node"
)

// The core decides what a switch's reason, a member's failure and a node's
// lack are, and hands them over as data (group.Why, fault.Kind, node.Lack)
// beside its English text; the window only puts them into its language
// here. A value this window does not know (a newer service) falls back to
// the core's English.

// switchWhy says why a group switched, in the window's language; english
// is the core's text for a Why this window cannot put into words.
func switchWhy(w group.Why, english string) string {
	switch w.Kind {
	case group.WhyFailed:
		return tr("switch.failed", M{"Member": w.Member, "Fault": faultWords(w.Fault, english)})
	case group.WhyRecovered:
		return tr("switch.recovered", M{"Member": w.Member, "Probes": trN("count.goodProbes", w.Probes), "Over": spanString(w.Over)})
	case group.WhyLatency:
		return tr("switch.latency", M{"Member": w.Member, "RTT": tr("unit.ms", M{"N": w.RTT.Milliseconds()})})
	case group.WhySelected:
		return tr("switch.selected", M{"Member": w.Member})
	case group.WhyThrottled:
		return tr("switch.throttled", M{"Member": w.Member, "Rate": rateString(int64(w.Rate)), "Next": w.Next, "NextRate": rateString(int64(w.NextRate))})
	}
	return english
}

// faultWords says what kind of failure k is; english is the core's whole
// error, said as it is for a kind this window does not know.
func faultWords(k fault.Kind, english string) string { return trKey(faultKeys, k, english) }

// faultKeys are the messages of the failure kinds (literal keys, so that
// the bundles' tests see them used).
var faultKeys = map[fault.Kind]string{
	fault.Timeout:     "fault.timeout",
	fault.Refused:     "fault.refused",
	fault.Reset:       "fault.reset",
	fault.Unreachable: "fault.unreachable",
	fault.DNS:         "fault.dns",
	fault.TLS:         "fault.tls",
	fault.Auth:        "fault.auth",
	fault.Throttled:   "fault.throttled",
	fault.Other:       "fault.error",
}

// lackWords says what a node needs that Skiff lacks; english is the core's
// reason, said as it is for a feature this window does not know. A node
// with no lack but a reason has settings that are wrong.
func lackWords(l *node.Lack, english string) string {
	if l == nil {
		if english == "" {
			return ""
		}
		return tr("unsupported.invalid")
	}
	if key, ok := lackKeys[l.Feature]; ok {
		return tr(key, M{"Value": l.Value})
	}
	return english
}

// lackKeys are the messages of the features a node may lack.
var lackKeys = map[node.Feature]string{
	node.FeatureProtocol:  "unsupported.protocol",
	node.FeatureTransport: "unsupported.transport",
	node.FeatureMultiplex: "unsupported.multiplex",
	node.FeatureCipher:    "unsupported.cipher",
	node.FeaturePlugin:    "unsupported.plugin",
	node.FeatureOption:    "unsupported.option",
	node.FeatureInfo:      "unsupported.info",
}

// spanString formats a span of time as ageString does ("12 s", "3 min").
func spanString(d time.Duration) string {
	now := time.Now()
	return ageString(now, now.Add(-d))
}
