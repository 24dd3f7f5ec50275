package outbound

import (
	"fmt"
	"io"
	"net"
	"sync"
)

// Flows is the set of flows (streams, packet sessions) an outbound has
// handed out and not yet seen closed, so that the outbound's Close can
// close them. The zero value is an empty, open set.
type Flows struct {
	mu     sync.Mutex
	open   map[io.Closer]struct{}
	closed bool
}

// Add records c; it reports false, recording nothing, once Close has run.
func (f *Flows) Add(c io.Closer) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	if f.open == nil {
		f.open = map[io.Closer]struct{}{}
	}
	f.open[c] = struct{}{}
	return true
}

// Keep records c as Add does, for a client's dial that hands c out. Once
// Close has run it closes c instead and returns the error the dial then
// returns, "proto: server: client closed".
func (f *Flows) Keep(c io.Closer, proto, server string) error {
	if f.Add(c) {
		return nil
	}
	c.Close()
	return fmt.Errorf("%s: %s: client closed", proto, server)
}

// Remove forgets c (a flow that closed).
func (f *Flows) Remove(c io.Closer) {
	f.mu.Lock()
	delete(f.open, c)
	f.mu.Unlock()
}

// CloseOnce is a flow's Close: the first call for c runs closeFlow and
// forgets c, and returns closeFlow's error; later calls (once is c's)
// return net.ErrClosed.
func (f *Flows) CloseOnce(once *sync.Once, c io.Closer, closeFlow func() error) error {
	err := net.ErrClosed
	once.Do(func() {
		err = closeFlow()
		f.Remove(c)
	})
	return err
}

// Close closes every recorded flow (outside the lock: a flow's Close may
// call Remove) and refuses later Adds.
func (f *Flows) Close() {
	f.mu.Lock()
	f.closed = true
	open := f.open
	f.open = nil
	f.mu.Unlock()
	for c := range open {
		c.Close()
	}
}
