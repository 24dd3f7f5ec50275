package group

import (
	"fmt"
	"time"
)

// Throttle judging. A member that carries flows is judged once a second
// from what it delivers (sample); when it looks throttled, the group
// measures it and the next member with a short speed probe each, and moves
// new flows only when the next member is clearly faster (decide). Looking
// throttled only buys a measurement: the thresholds here are loose, the
// margin in decide is what protects a working primary.
//
// Loss alone is never a sign: a lossy path that delivers is not throttled.
// An idle member (no bytes arriving, few dials) is not judged at all.

// sample is what a member delivered over the last window.
type sample struct {
	Secs       int           // window length, seconds
	Bytes      int64         // bytes received by its streams in the window
	Streams    int           // streams that received something in every second of the window
	Peak       float64       // best 3-second goodput it delivered lately, bytes/s
	Declared   float64       // receive rate declared to its server, bytes/s; 0: none
	Dials      int           // dials that finished in the window
	DialMedian time.Duration // their median connect time
	DialMin    time.Duration // least connect time of the last ten minutes
	RTT        time.Duration // path's smoothed RTT, where the outbound knows it; 0: unknown
	MinRTT     time.Duration // path's least RTT; 0: unknown
	LossPct    float64       // packets lost / sent, per cent, where known (shown, never judged)
}

// Judging thresholds.
const (
	judgeSecs    = 3       // window, seconds
	farBelowPeak = 8       // goodput this many times below the member's own recent best
	farBelowDecl = 20      // goodput this many times below the declared receive rate
	minPeak      = 125_000 // bytes/s (1 Mbit/s): a lower best says nothing
	rttInflation = 4       // smoothed RTT this many times the path's least...
	rttSlack     = 30 * time.Millisecond
	dialsJudged  = 8 // ...or at least this many dials in the window, their median
	dialInflate  = 4 // this many times the least connect time
	dialSlack    = 20 * time.Millisecond
)

func (s sample) rate() float64 { return float64(s.Bytes) / float64(s.Secs) }

// sustained reports whether a stream received through the whole window:
// demand the member is serving, not a burst nor a string of short
// requests.
func (s sample) sustained() bool { return s.Bytes > 0 && s.Streams > 0 }

// judge reports whether s looks throttled, and why in plain words.
func judge(s sample) (suspect bool, why string) {
	if !s.sustained() && s.Dials < dialsJudged {
		return false, "idle"
	}
	r := s.rate()
	switch {
	case s.sustained() && s.Peak >= minPeak && r*farBelowPeak < s.Peak:
		return true, fmt.Sprintf("%s, down from %s", mbit(r), mbit(s.Peak))
	case s.sustained() && s.Declared > 0 && r*farBelowDecl < s.Declared:
		return true, fmt.Sprintf("%s of %s declared", mbit(r), mbit(s.Declared))
	case s.sustained() && s.RTT > 0 && s.MinRTT > 0 && s.RTT > rttInflation*s.MinRTT+rttSlack:
		return true, fmt.Sprintf("RTT %s over a least %s", rttString(s.RTT), rttString(s.MinRTT))
	case s.Dials >= dialsJudged && s.DialMin > 0 && s.DialMedian > dialInflate*s.DialMin+dialSlack:
		return true, fmt.Sprintf("new connections take %s, at best %s", rttString(s.DialMedian), rttString(s.DialMin))
	}
	return false, ""
}

// speed is one member's speed probe.
type speed struct {
	Rate  float64       // goodput, bytes/s
	Bytes int64         // bytes it read
	First time.Duration // until the response's header arrived
	Err   error         // the probe failed (Rate is then 0)
}

// decide reports whether new flows should leave cur for next: cur must
// deliver less than half the best its live flows got lately (before, when
// that is known), and next margin times what cur does. A failed probe of
// next never moves flows; nor does a probe of cur that failed before any
// byte came (no answer in time says nothing about its goodput: a lossy
// path can be late with one response, and a dead one is the dead-member
// logic's); one that failed after some bytes counts as nothing delivered.
// The first condition keeps a lossy or moderately policed primary that
// still serves its applications: a faster fallback alone is no reason to
// leave the member the user put first.
func decide(cur, next speed, before, margin float64) bool {
	if next.Err != nil || next.Rate <= 0 || (cur.Err != nil && cur.Bytes == 0) {
		return false
	}
	if before >= minPeak && 2*cur.Rate >= before {
		return false
	}
	return next.Rate >= margin*cur.Rate
}

// recovered reports whether a member left as throttled delivers again: a
// margin above what it gave when it was left, and either half the best it
// delivered to live flows before (its own measure: a primary may be slower
// than its fallback by nature) or no longer so far below the member that
// took over that it would be left again at once.
func recovered(now speed, t throttleMark, margin float64) bool {
	if now.Err != nil || now.Rate <= 0 {
		return false
	}
	return now.Rate >= margin*t.Left && (now.Rate >= t.Before/2 || now.Rate*margin > t.Taker)
}

// throttleMark is what was measured when a member was left as throttled.
type throttleMark struct {
	Left   float64 // its speed probe, bytes/s
	Taker  float64 // the speed probe of the member that took over
	Before float64 // the best its live flows got lately (meter peak)
}

// rttString formats an RTT for an event.
func rttString(d time.Duration) string {
	if d < 10*time.Millisecond {
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%d ms", d.Milliseconds())
}

// mbit formats bytes/s as Mbit/s.
func mbit(bps float64) string {
	m := bps * 8 / 1e6
	switch {
	case m >= 10:
		return fmt.Sprintf("%.0f Mbit/s", m)
	case m >= 1:
		return fmt.Sprintf("%.1f Mbit/s", m)
	default:
		return fmt.Sprintf("%.2f Mbit/s", m)
	}
}
