package sysproxy

import (
	"context"
	"net/netip"
	"sync"
	"time"
)

// Keeper makes this session's proxy settings follow what its owner wants:
// pointed at an address, or put back. At its start it puts back what a
// killed owner left. The settings tools take tens of milliseconds each, so
// it works on a goroutine of its own, and the newest wish wins. The
// window and the tray process (whichever owns the session's settings)
// each drive one.
type Keeper struct {
	p        *Proxy
	wish     chan string // the address wanted; "" for off
	done     chan struct{}
	stopOnce sync.Once

	mu     sync.Mutex
	sent   string   // the last wish sent
	closed bool     // Stop was called: no more wishes
	on     string   // the address the settings point at; "" when off
	names  []string // the stores set
	err    error    // the last failure
}

// NewKeeper starts a keeper of p's settings.
func NewKeeper(p *Proxy) *Keeper {
	k := &Keeper{p: p, wish: make(chan string, 1), done: make(chan struct{})}
	go k.run()
	return k
}

// Follow asks for the settings to point at addr ("": put back). It does
// not wait.
func (k *Keeper) Follow(addr string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed || addr == k.sent {
		return
	}
	k.sent = addr
	select {
	case <-k.wish: // an older wish not yet taken: the newest wins
	default:
	}
	k.wish <- addr // the only sender, with the buffer emptied: never blocks
}

// State is what the settings are: the address they point at ("" when
// off), the stores set, and the last failure.
func (k *Keeper) State() (on string, names []string, err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.on, k.names, k.err
}

func (k *Keeper) run() {
	defer close(k.done)
	ctx := context.Background()
	if _, err := k.p.Recover(ctx); err != nil {
		k.set("", nil, err)
	}
	for w := range k.wish {
		k.mu.Lock()
		on := k.on
		k.mu.Unlock()
		if w == on {
			continue
		}
		if w == "" {
			k.set("", nil, k.p.Disable(ctx))
			continue
		}
		addr, err := netip.ParseAddrPort(w)
		if err != nil {
			k.set("", nil, err)
			continue
		}
		names, err := k.p.Enable(ctx, Config{Addr: addr})
		if err != nil {
			k.set("", nil, err)
			continue
		}
		k.set(w, names, nil)
	}
}

func (k *Keeper) set(on string, names []string, err error) {
	k.mu.Lock()
	k.on, k.names, k.err = on, names, err
	k.mu.Unlock()
}

// Stop ends the keeper and puts the settings back; its owner is ending.
// Calls after the first do nothing.
func (k *Keeper) Stop() {
	k.stopOnce.Do(func() {
		k.mu.Lock()
		k.closed = true
		close(k.wish)
		k.mu.Unlock()
		<-k.done
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		k.p.Disable(ctx)
	})
}
