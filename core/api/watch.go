package api

import (
	"context"
	"sync"
	"time"

	"github.com/skiffvpn/skiff/core"
)

// watchBuffer is how many notices a watcher may fall behind before it
// misses some (it then gets NoticeDropped and can read the state again).
const watchBuffer = 256

// Watch implements Backend.
func (l *Local) Watch(ctx context.Context, o WatchOptions) (<-chan Notice, error) {
	events, stopEvents := l.ctrl.Subscribe(64)
	var (
		logs     <-chan core.LogRecord
		stopLogs = func() {}
	)
	if o.Logs {
		logs, stopLogs = l.ctrl.SubscribeLogs(watchBuffer)
	}
	profiles, stopProfiles := l.profiles.subscribe()
	out := make(chan Notice, watchBuffer)
	st := l.status(l.ctrl.Status())
	out <- Notice{Kind: NoticeStatus, Time: time.Now(), Status: &st}
	go func() {
		defer close(out)
		defer stopEvents()
		defer stopLogs()
		defer stopProfiles()
		var tick <-chan time.Time
		if o.Stats {
			t := time.NewTicker(time.Second)
			defer t.Stop()
			tick = t.C
		}
		dropped := false
		send := func(n Notice) {
			if dropped {
				select {
				case out <- Notice{Kind: NoticeDropped, Time: time.Now()}:
					dropped = false
				default:
					return
				}
			}
			select {
			case out <- n:
			default:
				dropped = true
			}
		}
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-events:
				if !ok {
					return
				}
				send(l.notice(ev))
			case rec, ok := <-logs:
				if !ok {
					return
				}
				send(Notice{Kind: NoticeLog, Time: rec.Time, Log: &rec})
			case rev := <-profiles:
				send(Notice{Kind: NoticeProfile, Time: time.Now(), Profile: &ProfileRevision{Rev: rev}})
			case <-tick:
				s := l.ctrl.Stats()
				st := l.status(l.ctrl.Status())
				send(Notice{Kind: NoticeStats, Time: time.Now(), Stats: &s, Status: &st})
			}
		}
	}()
	return out, nil
}

// notice turns a core event into a Notice.
func (l *Local) notice(ev core.Event) Notice {
	st := l.status(ev.Status)
	if st.State == core.Running && st.Member == "" {
		// The event's status was taken before the group picked a member.
		st.Member = l.ctrl.Status().Member
	}
	n := Notice{Time: ev.Time, Status: &st, Message: ev.Message}
	switch ev.Kind {
	case core.EventSwitch:
		n.Kind, n.Switch = NoticeSwitch, ev.Switch
	case core.EventFlowFailed:
		n.Kind = NoticeFlowFailed
		n.Error = &Error{Code: CodeOf(ev.Err), Message: ev.Message}
	default:
		n.Kind = NoticeStatus
	}
	return n
}

// notifier fans profile revisions out to watchers; a watcher that has not
// read the last one gets only the newest.
type notifier struct {
	mu   sync.Mutex
	subs map[chan string]struct{}
}

func (n *notifier) subscribe() (<-chan string, func()) {
	ch := make(chan string, 1)
	n.mu.Lock()
	if n.subs == nil {
		n.subs = map[chan string]struct{}{}
	}
	n.subs[ch] = struct{}{}
	n.mu.Unlock()
	return ch, func() {
		n.mu.Lock()
		delete(n.subs, ch)
		n.mu.Unlock()
	}
}

func (n *notifier) publish(rev string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for ch := range n.subs {
		select {
		case <-ch:
		default:
		}
		select {
		case ch <- rev:
		default:
		}
	}
}
