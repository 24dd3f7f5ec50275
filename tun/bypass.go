package tun

import (
	"context"
	"net"
	"sync"
	"time"

	"github.com/skiffvpn/skiff/internal/sysdial"
)

// bypass is the Dialer for Skiff's own sockets. On Linux the fwmark routes
// them by the main table, which follows the default route by itself; on
// macOS and Windows they are bound to the default interface, which a
// watcher keeps current as networks come and go.
type bypass struct {
	mark     uint32
	resolver *net.Resolver // its lookups leave on its own sockets

	mu    sync.RWMutex
	iface string

	stopOnce sync.Once
	done     chan struct{}
	kick     chan struct{} // look for the default interface now
	wg       sync.WaitGroup
}

var _ sysdial.Dialer = (*bypass)(nil)

func newBypass(mark uint32) *bypass {
	b := &bypass{mark: mark, done: make(chan struct{}), kick: make(chan struct{}, 1)}
	b.resolver = sysdial.NewResolver(b.DialContext)
	return b
}

func (b *bypass) dialer() *sysdial.SystemDialer {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return &sysdial.SystemDialer{Mark: b.mark, Interface: b.iface, Resolver: b.resolver}
}

// DialContext dials outside the tunnel.
func (b *bypass) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	return b.dialer().DialContext(ctx, network, address)
}

// ListenPacket opens a packet socket outside the tunnel.
func (b *bypass) ListenPacket(ctx context.Context, network, address string) (net.PacketConn, error) {
	return b.dialer().ListenPacket(ctx, network, address)
}

// NameResolver returns the resolver whose queries leave on the bypass's
// sockets (sysdial.LookupNetIP uses it).
func (b *bypass) NameResolver() *net.Resolver { return b.resolver }

// Interface returns the interface sockets are bound to ("" when the mark
// alone keeps them out of the tunnel).
func (b *bypass) Interface() string {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.iface
}

func (b *bypass) setInterface(name string) (changed bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	changed = b.iface != name
	b.iface = name
	return changed
}

// follow polls find every interval and binds new sockets to the interface
// it names, skipping the tunnel's own device.
func (b *bypass) follow(t *Tunnel, interval time.Duration, find func(skip string) (string, error)) {
	update := func() {
		name, err := find(t.name)
		if err != nil || name == "" {
			return
		}
		if b.setInterface(name) {
			t.log.Info("tun: default interface", "name", name)
		}
	}
	update()
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		tk := time.NewTicker(interval)
		defer tk.Stop()
		for {
			select {
			case <-tk.C:
				update()
			case <-b.kick:
				update()
			case <-b.done:
				return
			}
		}
	}()
}

// refresh makes follow look for the default interface at once (the network
// changed); without follow (Linux) it does nothing.
func (b *bypass) refresh() {
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

func (b *bypass) stop() {
	b.stopOnce.Do(func() { close(b.done) })
	b.wg.Wait()
}
