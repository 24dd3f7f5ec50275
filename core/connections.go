package core

import (
	"errors"
	"net/netip"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/process"
	"github.com/skiffvpn/skiff/core/stats"
)

// maxNamedPerList bounds the program look-ups one listing makes: each
// walks the OS's socket table, 1.3-3.3 ms on Linux here
// (process.BenchmarkFindNewSocket), and the window lists every second.
// The rest are named by the next listings.
const maxNamedPerList = 16

// connections lists the run's open connections, each with the program
// that opened it. A program is looked up once per connection, while its
// socket is open (the list holds only open ones), and kept in the table;
// one a rule already asked for is there from the start.
func (r *run) connections() []stats.ConnInfo {
	list := r.stats.Connections()
	looked := 0
	for i := range list {
		c := &list[i]
		if c.Process != "" {
			continue
		}
		if looked == maxNamedPerList {
			break
		}
		src, err := netip.ParseAddrPort(c.Source)
		if err != nil {
			continue // not a socket on this machine
		}
		looked++
		info, err := r.procs.Find(c.Network, src)
		switch {
		case errors.Is(err, process.ErrUnsupported):
			return list
		case err != nil:
			c.Process = flow.ProcessUnknown
		default:
			c.Process = info.Path
		}
		r.stats.SetProcess(c.ID, c.Process)
	}
	return list
}
