// Package stats keeps the numbers the GUI shows about the running core:
// bytes relayed in total and per outbound, throughput sampled every second
// for the last minute, the process's memory, and the table of open
// connections (which the GUI can also close).
//
// Counting is atomic adds on the relay's hot path; everything else is read
// at the GUI's pace and takes a lock only for the connection table.
package stats

import (
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
)

// Counter is a byte counter that also adds into its parent, so that a
// connection's bytes are counted in its outbound's and in the totals with
// one call. It implements relay.Counter.
type Counter struct {
	n      atomic.Int64
	parent *Counter
}

// Add adds n to c and to its ancestors.
func (c *Counter) Add(n int64) {
	for ; c != nil; c = c.parent {
		c.n.Add(n)
	}
}

// Load returns the count.
func (c *Counter) Load() int64 { return c.n.Load() }

// Pair counts both directions: Up is from the app toward the server, Down
// the replies.
type Pair struct {
	Up, Down Counter
}

// Stats is the collection of counters and the connection table of one run
// of the core. The zero value is not usable; call New.
type Stats struct {
	total Pair

	mu        sync.Mutex
	outbounds map[string]*Pair
	conns     map[uint64]*Conn
	nextID    uint64

	sampler sampler
}

// New returns empty Stats.
func New() *Stats {
	return &Stats{
		outbounds: make(map[string]*Pair),
		conns:     make(map[uint64]*Conn),
	}
}

// Conn is one entry of the connection table: a flow being relayed. Its
// counters feed the outbound's and the totals.
type Conn struct {
	Up, Down Counter // pass to relay.Stream / relay.Packet

	info  ConnInfo // fixed at Track; counters are filled in on listing
	s     *Stats
	close func()
}

// ConnInfo describes a connection as listed by Connections.
type ConnInfo struct {
	ID          uint64
	Network     string // "tcp" or "udp"
	Inbound     string
	Source      string
	Destination string
	Host        string
	Outbound    string
	Member      string // the server that carried it when Outbound is a group; "" otherwise
	Process     string // the program that opened it (its path), flow.ProcessUnknown if not found; "" until looked up
	Up, Down    int64
	Start       time.Time
}

// Program is the file name of the program that opened the connection,
// "" while it is not known. The path is this machine's, so it is taken
// apart with this machine's separators.
func (c ConnInfo) Program() string {
	if c.Process == "" || c.Process == flow.ProcessUnknown {
		return ""
	}
	return filepath.Base(c.Process)
}

// Track adds a connection to the table, counted under outbound. close is
// called by CloseConnection to end the flow early (typically a context's
// cancel func); it must not block. Call Done when the flow has ended.
func (s *Stats) Track(m *flow.Metadata, outbound string, close func()) *Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	ob := s.outbounds[outbound]
	if ob == nil {
		ob = &Pair{}
		ob.Up.parent = &s.total.Up
		ob.Down.parent = &s.total.Down
		s.outbounds[outbound] = ob
	}
	s.nextID++
	c := &Conn{
		info: ConnInfo{
			ID:          s.nextID,
			Network:     m.Network,
			Inbound:     m.Inbound,
			Source:      m.Source.String(),
			Destination: m.Destination.String(),
			Host:        m.Host,
			Outbound:    outbound,
			Process:     m.Process,
			Start:       time.Now(),
		},
		s:     s,
		close: close,
	}
	c.Up.parent = &ob.Up
	c.Down.parent = &ob.Down
	s.conns[c.info.ID] = c
	return c
}

// ID returns the connection's identifier in the table.
func (c *Conn) ID() uint64 { return c.info.ID }

// Done removes the connection from the table. Its bytes stay counted in
// its outbound and in the totals.
func (c *Conn) Done() {
	c.s.mu.Lock()
	delete(c.s.conns, c.info.ID)
	c.s.mu.Unlock()
}

// SetProcess records the program (its path) of the connection with the
// given id, if it is still open.
func (s *Stats) SetProcess(id uint64, path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.conns[id]; c != nil {
		c.info.Process = path
	}
}

// Connections lists the open connections, oldest first.
func (s *Stats) Connections() []ConnInfo {
	s.mu.Lock()
	list := make([]ConnInfo, 0, len(s.conns))
	for _, c := range s.conns {
		ci := c.info
		ci.Up = c.Up.Load()
		ci.Down = c.Down.Load()
		list = append(list, ci)
	}
	s.mu.Unlock()
	sort.Slice(list, func(i, j int) bool { return list[i].ID < list[j].ID })
	return list
}

// ConnCount returns the number of open connections.
func (s *Stats) ConnCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// CloseConnection ends the flow with the given id and reports whether it
// was open. The flow leaves the table when its relay has stopped.
func (s *Stats) CloseConnection(id uint64) bool {
	s.mu.Lock()
	c := s.conns[id]
	s.mu.Unlock()
	if c == nil {
		return false
	}
	if c.close != nil {
		c.close()
	}
	return true
}

// CloseAll ends every open flow.
func (s *Stats) CloseAll() {
	s.mu.Lock()
	closers := make([]func(), 0, len(s.conns))
	for _, c := range s.conns {
		if c.close != nil {
			closers = append(closers, c.close)
		}
	}
	s.mu.Unlock()
	for _, f := range closers {
		f()
	}
}

// Totals returns the bytes relayed so far, up and down.
func (s *Stats) Totals() (up, down int64) {
	return s.total.Up.Load(), s.total.Down.Load()
}

// OutboundTotals returns the bytes relayed so far per outbound name.
func (s *Stats) OutboundTotals() map[string][2]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[string][2]int64, len(s.outbounds))
	for name, p := range s.outbounds {
		m[name] = [2]int64{p.Up.Load(), p.Down.Load()}
	}
	return m
}

// SetMember records which member of a group carried the connection.
func (c *Conn) SetMember(member string) {
	c.s.mu.Lock()
	c.info.Member = member
	c.s.mu.Unlock()
}

// SetHost records a host name learned after Track (sniffed from the
// flow's first bytes).
func (c *Conn) SetHost(host string) {
	c.s.mu.Lock()
	c.info.Host = host
	c.s.mu.Unlock()
}
