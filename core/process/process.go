// Package process finds the program that opened a flow, for routing rules
// that name programs ("this game direct, that browser through the proxy").
//
// A flow reaches Skiff from a socket of the app's, on this machine, whose
// local address is the flow's source: the local proxy sees it as its
// client's address, the TUN as the packets' source. The OS's socket table
// maps that address to the socket, and the socket to the process that
// holds it. Both look-ups cost a walk of a kernel table, so a Finder keeps
// what it found for a while: the same program opens many flows.
//
// Linux reads /proc (net/tcp, net/udp and their IPv6 twins, then the
// fd tables of the processes of the socket's owner). Windows asks iphlpapi
// for its socket tables with their owners' PIDs (GetExtendedTcpTable,
// GetExtendedUdpTable), then the PID's image path. macOS reads the sysctls
// net.inet.{tcp,udp}.pcblist_n (each socket with the PID that last used
// it), then the PID's kern.procargs2 for its path; no cgo. Other systems
// report ErrUnsupported; a rule that needs a program then does not match.
package process

import (
	"errors"
	"net/netip"
	"path/filepath"
	"sync"
	"time"
)

// ErrUnsupported is returned where programs cannot be looked up.
var ErrUnsupported = errors.New("process: finding the program of a flow is not supported on this system")

// ErrNotFound is returned when no socket or no process holds the address
// (the app closed it, or it is not on this machine).
var ErrNotFound = errors.New("process: no program holds that socket")

// Info is a program that holds a socket.
type Info struct {
	PID  int
	UID  int
	Path string // the executable, absolute
}

// Name is the executable's file name, as rules match it ("firefox").
func (i Info) Name() string { return filepath.Base(i.Path) }

// Finder looks up and remembers the programs of flows. The zero value is not
// usable; call New. It is safe for concurrent use.
type Finder struct {
	ttl time.Duration
	os  osFinder

	mu    sync.Mutex
	cache map[cacheKey]cached
	swept time.Time
}

type cacheKey struct {
	network string
	src     netip.AddrPort
}

type cached struct {
	info Info
	err  error
	at   time.Time
}

// osFinder is the system's look-up.
type osFinder interface {
	find(network string, src netip.AddrPort) (Info, error)
}

// DefaultTTL is how long a look-up's answer is kept for the same source
// address. Source ports are reused only after the socket closed, and an
// answer older than this is looked up again.
const DefaultTTL = 10 * time.Second

// New returns a Finder for this system.
func New() *Finder { return newFinder(newOSFinder(), DefaultTTL) }

func newFinder(os osFinder, ttl time.Duration) *Finder {
	return &Finder{os: os, ttl: ttl, cache: map[cacheKey]cached{}}
}

// Find returns the program whose socket has local address src, for a flow
// of network ("tcp" or "udp").
func (f *Finder) Find(network string, src netip.AddrPort) (Info, error) {
	k := cacheKey{network, netip.AddrPortFrom(src.Addr().Unmap(), src.Port())}
	now := time.Now()
	f.mu.Lock()
	if c, ok := f.cache[k]; ok && now.Sub(c.at) < f.ttl {
		f.mu.Unlock()
		return c.info, c.err
	}
	f.mu.Unlock()
	info, err := f.os.find(network, k.src)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cache[k] = cached{info, err, now}
	if now.Sub(f.swept) > f.ttl {
		f.swept = now
		for k, c := range f.cache {
			if now.Sub(c.at) >= f.ttl {
				delete(f.cache, k)
			}
		}
	}
	return info, err
}
